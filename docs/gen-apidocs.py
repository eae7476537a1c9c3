#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Build libspacersv's API reference: HTML and section-3 man pages.

Runs doxygen on the configured Doxyfile (docs/Doxyfile.in), fails when it
printed any warning, and writes the man pages a reader asks for:

- one page per function, made here from doxygen's XML output, so that
  `man srsv_space_reserve` opens on that function: NAME, SYNOPSIS (the
  include line and the prototype, and the macro callers use when the
  function is the _sized form behind one), DESCRIPTION, PARAMETERS, RETURN
  VALUE, THREAD SAFETY (the function's @note; the library-wide default
  when it has none), CAVEATS (@warning), NOTES and SEE ALSO;
- for a macro that passes the caller's sizeof to a _sized function
  (srsv_space_snapshot() -> srsv_space_snapshot_sized()), a link to that
  function's page;
- one page per public header (doxygen's, renamed libspacersv_<header>.3,
  since names like types.h.3 would clash with other packages) and the pages
  of the public structs, and one link to its header's page per other macro,
  enum and enum value.

Pages doxygen makes for struct members (size.3, open.3, ...) are dropped.
With --library, every function the shared library exports (nm -D) must
have a page of its own; one without fails the build.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

# The library-wide thread-safety rule (include/libspacersv/spacersv.h), for
# a function whose documentation has no @note.
DEFAULT_THREAD_SAFETY = ('Thread-safe: every function of the library is, '
                         'unless its documentation says otherwise '
                         '(<libspacersv/spacersv.h>).')

# Where the packages install the guides the pages refer to.
DOC_DIR = '/usr/share/doc/libspacersv-dev'


# --------------------------------------------------------------------------
# roff
# --------------------------------------------------------------------------

def esc(text):
    """Escape text for a roff text line (not its start: see line())."""
    text = text.replace('\\', '\\e')
    # A minus sign, not a hyphen: -EINVAL, ->, flags must copy as typed.
    text = text.replace('-', '\\-')
    return text


def line(text):
    """A text line: a leading . or ' would make it a request."""
    text = text.strip()
    if text[:1] in ('.', "'"):
        text = '\\&' + text
    return text


def verbatim_line(text):
    """A line of a no-fill block: indentation kept."""
    if not text.strip():
        return '.sp'
    if text[:1] in ('.', "'"):
        return '\\&' + text
    return text


def font(text, f):
    return '\\f%s%s\\fR' % (f, text) if text else ''


class Inline:
    """Renders doxygen's inline markup as roff: code bold, parameters
    italic, references bold (functions with their "()")."""

    def __init__(self, params=()):
        self.params = set(params)
        self.refs = []          # functions referred to (SEE ALSO)

    def render(self, elem, skip_blocks=True):
        out = [esc(elem.text or '')]
        for child in elem:
            if child.tag in BLOCK_TAGS and skip_blocks:
                pass
            else:
                out.append(self.inline(child))
            out.append(esc(child.tail or ''))
        return ''.join(out)

    def inline(self, e):
        tag = e.tag
        text = ''.join(e.itertext())
        if tag == 'computeroutput':
            word = text.strip().rstrip(':.,;')
            if word in self.params:
                return font(esc(text), 'I')
            return font(esc(text), 'B')
        if tag == 'ref':
            name = text.strip()
            if re.fullmatch(r'srsv_\w+\(\)', name):
                self.refs.append(name[:-2])
            return font(esc(text), 'B')
        if tag in ('emphasis', 'parameterref'):
            return font(esc(text), 'I')
        if tag == 'bold':
            return font(esc(text), 'B')
        if tag == 'ulink':
            return '%s <%s>' % (esc(text), esc(e.get('url', '')))
        if tag == 'linebreak':
            return '\n.br\n'
        if tag == 'sp':
            return ' '
        if tag == 'ndash':
            return '\\(en'
        if tag == 'mdash':
            return '\\(em'
        if tag == 'nonbreakablespace':
            return '\\ '
        if tag == 'anchor':
            return ''
        return self.render(e)


BLOCK_TAGS = {'parameterlist', 'simplesect', 'itemizedlist', 'orderedlist',
              'programlisting', 'verbatim', 'preformatted', 'table',
              'heading', 'xrefsect'}


def paragraphs(elem, inl, sink):
    """Append to @sink the roff of a description: its paragraphs, lists and
    verbatim blocks.  @p parameterlist and @p simplesect children are left
    to the caller (they become sections of their own)."""
    for para in elem.findall('para'):
        para_blocks(para, inl, sink)


def para_blocks(para, inl, sink):
    # A <para> mixes text and blocks (doxygen puts lists and the parameter
    # lists inside paragraphs): text runs become paragraphs of their own.
    run = [esc(para.text or '')]

    def flush():
        text = ''.join(run).strip()
        if text:
            sink.append('.PP')
            sink.extend(t.strip() if t.strip() == '.br' else line(t)
                        for t in text.split('\n') if t.strip())
        run[:] = []

    for child in para:
        if child.tag in ('parameterlist', 'simplesect', 'xrefsect'):
            pass
        elif child.tag in ('itemizedlist', 'orderedlist'):
            flush()
            for i, item in enumerate(child.findall('listitem'), 1):
                mark = '\\(bu' if child.tag == 'itemizedlist' else '%d.' % i
                sink.append('.IP %s 3' % mark)
                sub = []
                for p in item.findall('para'):
                    para_blocks(p, inl, sub)
                # The first paragraph belongs to the item, not a new one.
                if sub and sub[0] == '.PP':
                    sub = sub[1:]
                sink.extend('.IP' if s == '.PP' else s for s in sub)
            sink.append('.PP')
        elif child.tag in ('verbatim', 'preformatted', 'programlisting'):
            flush()
            text = ''.join(child.itertext()).strip('\n')
            sink.extend(['.PP', '.RS 4', '.nf'])
            sink.extend(verbatim_line(esc(t)) for t in text.split('\n'))
            sink.extend(['.fi', '.RE'])
        elif child.tag in BLOCK_TAGS:
            flush()
            sink.append('.PP')
            sink.append(line(inl.render(child, skip_blocks=False)))
        else:
            run.append(inl.inline(child))
        run.append(esc(child.tail or ''))
    flush()


def plain(elem):
    return re.sub(r'\s+', ' ', ''.join(elem.itertext())).strip() \
        if elem is not None else ''


# --------------------------------------------------------------------------
# The pages
# --------------------------------------------------------------------------

class Function:
    def __init__(self, memberdef):
        m = memberdef
        self.m = m
        self.name = m.findtext('name')
        self.header = m.find('location').get('file')      # libspacersv/x.h
        rtype = plain(m.find('type'))
        self.must_check = 'SRSV_MUST_CHECK' in rtype.split()
        self.rtype = ' '.join(w for w in rtype.split()
                              if w != 'SRSV_MUST_CHECK')
        self.params = []
        for p in m.findall('param'):
            ptype = plain(p.find('type'))
            pname = p.findtext('declname') or ''
            if ptype == 'void' and not pname:
                continue
            self.params.append((ptype, pname))
        self.macro = None        # (name, params, body) of the macro over us


# Columns of the synopsis: 80 less man's indentation of 7.
SYNOPSIS_WIDTH = 72


def wrap_words(text, width, indent):
    """Break @text after its ", " separators into lines of at most @width
    columns (a word longer than that gets a line of its own)."""
    words = text.split(', ')
    lines, cur = [], ''
    for i, w in enumerate(words):
        piece = w + (', ' if i < len(words) - 1 else '')
        if cur and len(indent) + len(cur) + len(piece.rstrip()) > width:
            lines.append(cur.rstrip())
            cur = ''
        cur += piece
    lines.append(cur.rstrip())
    return [indent + ln for ln in lines]


def synopsis_call(rtype, name, params, width=SYNOPSIS_WIDTH):
    """The prototype as .BI lines: types bold, parameter names italic,
    continuation lines aligned after the opening parenthesis."""
    head = '%s%s%s(' % (rtype, '' if rtype.endswith('*') else ' ', name)
    if not params:
        return ['.BI "%s" void );' % head.replace('"', '\\(dq')]
    pieces = []
    for i, (ptype, pname) in enumerate(params):
        sep = ');' if i == len(params) - 1 else ','
        gap = '' if ptype.endswith('*') else ' '
        pieces.append((ptype + gap, pname, sep))
    lines, cur, col = [], [], len(head)
    indent = ' ' * len(head)
    for ptype, pname, sep in pieces:
        size = len(ptype) + len(pname) + len(sep) + 1
        if cur and col + size > width:
            lines.append(cur)
            cur, col = [], len(indent)
        cur.append((ptype, pname, sep))
        col += size
    lines.append(cur)
    out = []
    for n, group in enumerate(lines):
        args = []
        for k, (ptype, pname, sep) in enumerate(group):
            bold = ptype if k == 0 else ' ' + ptype
            if k == 0:
                bold = (head if n == 0 else indent) + bold
            args.append('"%s"' % esc(bold).replace('"', '\\(dq'))
            args.append('"%s"' % esc(pname))
            args.append('"%s"' % esc(sep))
        out.append('.BI ' + ' '.join(args))
    return out


def function_page(f, date, version):
    """The roff of @f's own page."""
    m = f.m
    inl = Inline(p for _, p in f.params)
    names = [f.name]
    if f.macro and f.macro[0] != f.name:
        names.insert(0, f.macro[0])
    brief = plain(m.find('briefdescription')).rstrip('.')
    out = ['.\\" Generated by docs/gen-apidocs.py from %s; do not edit.'
           % f.header,
           '.TH "%s" 3 "%s" "libspacersv %s" "libspacersv Manual"'
           % (f.name, date, version),
           # Left-aligned, no hyphenation: identifiers must not break.
           '.ad l',
           '.nh',
           '.SH NAME',
           '%s \\- %s' % (', '.join(esc(n) for n in names), esc(brief)),
           '.SH SYNOPSIS',
           '.nf',
           '.B #include <libspacersv/spacersv.h>',
           '.PP']
    out.extend(synopsis_call(f.rtype, f.name, f.params))
    if f.macro:
        mname, mparams, body = f.macro
        out.append('.PP')
        if mparams:
            out.append('.BI "#define %s(" %s ")"' % (esc(mname), ' ", " '.join(
                '"%s"' % esc(p) for p in mparams)))
        else:
            out.append('.B "#define %s()"' % esc(mname))
        for ln in wrap_words(body, SYNOPSIS_WIDTH, ' ' * 8):
            out.append('.B "%s"' % esc(ln).replace('"', '\\(dq'))
    out.extend(['.fi', '.PP',
                'Compile and link with',
                '.IR "$(pkg\\-config \\-\\-cflags \\-\\-libs libspacersv)" .'])

    out.append('.SH DESCRIPTION')
    desc = []
    bd = m.find('briefdescription')
    for p in bd.findall('para'):
        para_blocks(p, inl, desc)
    paragraphs(m.find('detaileddescription'), inl, desc)
    said = plain(m.find('detaileddescription')) + plain(bd)
    if f.macro and f.macro[0] != f.name and f.macro[0] + '()' not in said:
        desc.append('.PP')
        desc.append(line(
            'Call it as %s: the macro passes the size of the structs as '
            'the caller\'s header has them (docs/api.md, "output structs").'
            % font(esc(f.macro[0] + '()'), 'B')))
    out.extend(desc)

    plists = {}
    for pl in m.iter('parameterlist'):
        plists.setdefault(pl.get('kind'), []).append(pl)
    sects = {}
    for s in m.iter('simplesect'):
        sects.setdefault(s.get('kind'), []).append(s)

    if f.params:
        out.append('.SH PARAMETERS')
        for pl in plists.get('param', []):
            for item in pl.findall('parameteritem'):
                pn = item.find('parameternamelist')
                names = [n.text or '' for n in pn.findall('parametername')]
                direction = pn.find('parametername').get('direction')
                tag = ', '.join(font(esc(n), 'I') for n in names)
                if direction:
                    tag += ' [%s]' % direction
                out.append('.TP')
                out.append(tag)
                body = []
                for p in item.find('parameterdescription').findall('para'):
                    para_blocks(p, inl, body)
                out.extend(s for s in body if s != '.PP')

    out.append('.SH RETURN VALUE')
    ret = []
    for s in sects.get('return', []):
        for p in s.findall('para'):
            para_blocks(p, inl, ret)
    for pl in plists.get('retval', []):
        for item in pl.findall('parameteritem'):
            pn = item.find('parameternamelist')
            names = [n.text or '' for n in pn.findall('parametername')]
            ret.append('.TP')
            ret.append(', '.join(font(esc(n), 'B') for n in names))
            body = []
            for p in item.find('parameterdescription').findall('para'):
                para_blocks(p, inl, body)
            ret.extend(s for s in body if s != '.PP')
    if not ret:
        ret = ['.PP', 'None.' if f.rtype == 'void' else
               'As the description says.']
    if ret[0] == '.TP':
        ret.insert(0, '.PP')
        ret.insert(1, 'Zero or a negative errno:' if f.rtype == 'int'
                   else 'One of:')
    out.extend(ret)

    out.append('.SH THREAD SAFETY')
    notes = []
    for s in sects.get('note', []):
        for p in s.findall('para'):
            para_blocks(p, inl, notes)
    out.extend(notes or ['.PP', esc(DEFAULT_THREAD_SAFETY)])

    if sects.get('warning'):
        out.append('.SH CAVEATS')
        for s in sects['warning']:
            for p in s.findall('para'):
                para_blocks(p, inl, out)

    extra = []
    for kind in ('since', 'attention', 'remark', 'pre', 'post'):
        for s in sects.get(kind, []):
            for p in s.findall('para'):
                para_blocks(p, inl, extra)
    if f.must_check:
        extra.extend(['.PP', line(
            'The result must be looked at: the prototype carries '
            'SRSV_MUST_CHECK, and gcc and clang warn (\\-Wunused\\-result) '
            'when a caller drops it.')])
    if extra:
        out.append('.SH NOTES')
        out.extend(extra)

    out.append('.SH SEE ALSO')
    for s in sects.get('see', []):
        plain_see = Inline()
        for p in s.findall('para'):
            plain_see.render(p)
        inl.refs.extend(plain_see.refs)
    header_page = 'libspacersv_' + os.path.basename(f.header)
    see = []
    for r in inl.refs:
        if r not in see and r != f.name and r != (f.macro or ('',))[0]:
            see.append(r)
    items = ['.BR %s (3)' % esc(header_page)]
    items += ['.BR %s (3)' % esc(r) for r in see]
    out.extend(i + ',' for i in items)
    out.append('the guides in')
    out.append('.IR %s/docs/ :' % DOC_DIR)
    out.append('.I api.md')
    out.append('(the API by object),')
    out.append('.I design.md')
    out.append('(how it works),')
    out.append('.I glossary.md')
    out.append('(the btrfs vocabulary).')
    return '\n'.join(s for s in out) + '\n'


def load_xml(xmldir):
    """Functions and macros of the public headers, from doxygen's XML."""
    functions, macros = {}, {}
    index = ET.parse(os.path.join(xmldir, 'index.xml'))
    for comp in index.getroot().findall('compound'):
        if comp.get('kind') != 'file':
            continue
        tree = ET.parse(os.path.join(xmldir, comp.get('refid') + '.xml'))
        for m in tree.iter('memberdef'):
            name = m.findtext('name')
            if m.get('kind') == 'function':
                functions[name] = Function(m)
            elif m.get('kind') == 'define':
                params = [p.findtext('defname') for p in m.findall('param')]
                body = re.sub(r'\s+', ' ',
                              plain(m.find('initializer')).replace('\\', ''))
                macros[name] = (name, params, body)
    # A macro over a _sized function (passes the caller's sizeof).
    for name, mac in macros.items():
        target = functions.get(name + '_sized')
        if target:
            target.macro = mac
        elif name in functions and mac[2].startswith(name + '_sized('):
            functions[name].macro = mac
    return functions, macros


def exported_functions(library):
    """The functions the shared library exports (nm -D --defined-only)."""
    nm = shutil.which('nm')
    if not nm:
        raise RuntimeError('nm not found (binutils)')
    out = subprocess.run([nm, '-D', '--defined-only', library],
                         stdout=subprocess.PIPE, check=True,
                         universal_newlines=True).stdout
    syms = set()
    for ln in out.splitlines():
        parts = ln.split()
        if len(parts) == 3 and parts[1] in 'TtWi':
            syms.add(parts[2].split('@')[0])
    return syms


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", action="version",
                    version="%(prog)s (libspacersv)")
    ap.add_argument("--doxygen", required=True, help="the doxygen program")
    ap.add_argument("--doxyfile", required=True, help="the configured Doxyfile")
    ap.add_argument("--outdir", required=True,
                    help="where html/ and man3/ are written")
    ap.add_argument("--library",
                    help="the shared library: each function it exports "
                    "must get a page")
    ap.add_argument("--project-version", default="",
                    help="the version the pages name")
    args = ap.parse_args()

    work = os.path.join(args.outdir, "doxygen")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    log = os.path.join(work, "warnings.log")
    with open(args.doxyfile, encoding="utf-8") as f:
        config = f.read()
    config += "\nOUTPUT_DIRECTORY = %s\nWARN_LOGFILE = %s\n" % (work, log)
    run = subprocess.run([args.doxygen, "-"], input=config.encode(),
                         check=False)
    warnings = ""
    if os.path.exists(log):
        with open(log, encoding="utf-8", errors="replace") as f:
            warnings = f.read().strip()
    if warnings:
        print(warnings, file=sys.stderr)
        n = len(warnings.splitlines())
        print("gen-apidocs: doxygen printed %d warning line(s); the reference "
              "must build without any" % n, file=sys.stderr)
        return 1
    if run.returncode != 0:
        print("gen-apidocs: doxygen exited %d" % run.returncode,
              file=sys.stderr)
        return 1

    html = os.path.join(args.outdir, "html")
    shutil.rmtree(html, ignore_errors=True)
    shutil.move(os.path.join(work, "html"), html)

    src = os.path.join(work, "man", "man3")
    man3 = os.path.join(args.outdir, "man3")
    shutil.rmtree(man3, ignore_errors=True)
    os.makedirs(man3)
    headers = {n for n in os.listdir(src) if n.endswith(".h.3")}
    date = ''
    kept = 0
    for name in sorted(os.listdir(src)):
        with open(os.path.join(src, name), encoding="utf-8") as f:
            text = f.read()
        if name in headers:
            out = "libspacersv_" + name
            text = re.sub(r'^\.TH "libspacersv/', '.TH "libspacersv_', text,
                          count=1)
            m = re.match(r'\.TH "[^"]*" 3 "([^"]*)"', text)
            if m:
                date = m.group(1)
        elif re.match(r"(srsv|SRSV)_", name):
            out = name
            m = re.fullmatch(r"\.so man3/(\S+)\s*", text)
            if m and m.group(1) in headers:
                text = ".so man3/libspacersv_%s\n" % m.group(1)
        else:
            continue
        # A text line that starts with ' (doxygen's quotes) would be read
        # as a roff control line.
        text = re.sub(r"^'", r"\\&'", text, flags=re.M)
        with open(os.path.join(man3, out), "w", encoding="utf-8") as f:
            f.write(text)
        kept += 1

    # One page per function, over doxygen's links to the header page.
    functions, macros = load_xml(os.path.join(work, "xml"))
    for name, fn in sorted(functions.items()):
        with open(os.path.join(man3, name + ".3"), "w",
                  encoding="utf-8") as f:
            f.write(function_page(fn, date, args.project_version))
    linked = 0
    for name, fn in sorted(functions.items()):
        if fn.macro and fn.macro[0] != name and fn.macro[0] not in functions:
            with open(os.path.join(man3, fn.macro[0] + ".3"), "w",
                      encoding="utf-8") as f:
                f.write(".so man3/%s.3\n" % name)
            linked += 1
    print("gen-apidocs: %d pages of functions, %d links from their macros, "
          "%d header, struct and other link pages, 0 warnings"
          % (len(functions), linked, kept))

    missing = []
    if args.library:
        for sym in sorted(exported_functions(args.library)):
            if sym not in functions:
                missing.append(sym)
    if "srsv_space_reserve" not in functions:
        missing.append("srsv_space_reserve")
    if missing:
        print("gen-apidocs: exported function(s) without a page of their "
              "own (document them in include/libspacersv/): %s"
              % ", ".join(missing), file=sys.stderr)
        return 1
    if args.library:
        print("gen-apidocs: every function %s exports has its page"
              % os.path.basename(args.library))
    return 0


if __name__ == "__main__":
    sys.exit(main())
