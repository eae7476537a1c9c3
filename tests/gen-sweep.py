#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generate the sweep of bad arguments (sweep_probes.c) from the public headers.

For every function the version script exports (lib/libspacersv.sym: the
names its global patterns match among the functions the public headers
declare), the generated test calls it

  - with NULL for each pointer argument in turn, the other arguments valid
    (the fixture's ctx, pool, rsv, quota, queue, ticket, ... of sweep.c);
  - with out-of-range values for its enum, flag, size and count arguments
    (an unknown pool kind, flush mode, rsv type, quota kind, state, unknown
    flag bits, UINT64_MAX and SRSV_MAX_BYTES + 1 sizes, 0 where 0 is
    documented as invalid, a timeout of 0 and of UINT64_MAX);

and the runner (sweep.c) checks the answer against the function's doxygen
comment: a negative errno its @retval list documents (with the lists of the
functions it refers to, "as srsv_space_reserve()"), or the neutral value
its @return documents (NULL, 0, "unknown"); and that nothing changed.

The build fails (this script exits 1, naming them) when an exported
function has no probe, or an argument or a return value the rules below
cannot classify: such a function needs an entry in SPECIAL, PARAMS or
EXTRA, with a comment saying why.

usage: gen-sweep.py --sym lib/libspacersv.sym --out sweep_probes.c HEADER...
       gen-sweep.py --check ...   (no output: only the classification)
"""

import argparse
import fnmatch
import re
import sys

# ---------------------------------------------------------------------------
# What the headers cannot say: explicit entries, each with its reason.

# Functions whose return value has no documented neutral value, or that
# take no argument: how the sweep judges them.
SPECIAL = {
    # (A function without parameters is called once and must answer
    # within the deadline with a documented answer, a string for a name.)
    # Answers -ENOTSUP in a build without debug_locks, which its comment
    # says in its introduction, not in its @retval list.
    "srsv_debug_lock_stats_reset": {"errnos": ["-ENOTSUP"]},
    # "(must not be NULL)": a precondition in the header today.  The rule
    # of the sweep is that no exported function crashes on NULL: the
    # neutral value is 0 (no unallocated bytes, no room) or NULL.
    "srsv_ctx_unallocated": {"ret": "u64", "neutral": "0"},
    "srsv_ctx_user": {"ret": "ptr"},
    "srsv_zone_group_room": {"ret": "u64", "neutral": "0"},
}

# Per (function, parameter): the valid value, the bad values, or how a NULL
# is judged, where the general rules below would be wrong.
PARAMS = {
    # SRSV_RSV_ALL (UINT64_MAX) is a legal size: "release the whole size".
    ("srsv_rsv_release", "bytes"): {"bad": ["SRSV_MAX_BYTES + 1"]},
    # "Hold at least 0" is met by any rsv: 0 is legal here, although the
    # reservation errors it inherits (as srsv_space_reserve()) refuse
    # 0 bytes.
    ("srsv_rsv_refill", "min_reserved"): {"bad": ["UINT64_MAX",
                                                  "SRSV_MAX_BYTES + 1"]},
    # SRSV_DELALLOC_META_ALL (UINT64_MAX) is legal; above what was reserved
    # is not.
    ("srsv_delalloc_finish", "meta_used"): {"valid": "SRSV_DELALLOC_META_ALL",
                                            "bad": ["UINT64_MAX - 1"]},
    # The tickets array may be NULL only with max 0: the valid call passes
    # an array of 4, so NULL with max 4 is refused.
    ("srsv_space_snapshot_sized", "tickets"): {"null": "invalid"},
    ("srsv_space_snapshot_sized", "max"): {"valid": "4", "bad": []},
    # done may be NULL only with max 0 ("no limit").
    ("srsv_async_reap", "done"): {"null": "invalid"},
    ("srsv_async_reap", "max"): {"valid": "4", "bad": []},
    # A transaction 0 is "not pinned" for a free, and refused for a commit.
    ("srsv_bgroup_free", "transid"): {"valid": "0", "bad": []},
    ("srsv_ctx_commit_done", "transid"): {"valid": "1", "bad": ["0"]},
    # Any tenant id is legal.
    ("srsv_quota_create", "id"): {"valid": "2", "bad": []},
    ("srsv_quota_lookup", "id"): {"valid": "1", "bad": []},
    # The device figure and the global reserve's size are sizes: above
    # SRSV_MAX_BYTES they "could only be a wrapped negative number"
    # (spacersv.h), and only -EINVAL is documented.
    ("srsv_ctx_set_unallocated", "bytes"): {"valid": "64 * SWEEP_MIB",
                                            "bad": ["UINT64_MAX",
                                                    "SRSV_MAX_BYTES + 1"]},
    ("srsv_ctx_resize_global_rsv", "bytes"): {"valid": "64 * SWEEP_KIB",
                                              "bad": ["UINT64_MAX",
                                                      "SRSV_MAX_BYTES + 1"]},
    # Flags of an asynchronous reservation: only 0 ("NOWAIT is refused").
    ("srsv_ticket_reserve_async", "flags"): {
        "bad": ["1u << 30", "SRSV_RESERVE_NOWAIT"]},
    # The group calls name the fixture's group; a new group goes to a free
    # address.
    ("srsv_bgroup_add", "start"): {"valid": "2048 * SWEEP_MIB",
                                   "bad": ["UINT64_MAX"]},
    ("srsv_bgroup_add", "length"): {"valid": "1 * SWEEP_MIB"},
    ("srsv_zone_group_add", "start"): {"valid": "32 * SWEEP_MIB",
                                       "bad": ["UINT64_MAX"]},
    ("srsv_zone_group_add", "length"): {"valid": "1 * SWEEP_MIB"},
    ("srsv_zone_group_add", "capacity"): {"valid": "1 * SWEEP_MIB"},
}

# Probes the rules cannot derive (an argument bad only with another).
EXTRA = [
    # (function, {param: value}, kind, description)
]

# ---------------------------------------------------------------------------
# The general rules.

ENUMS = {
    "enum srsv_pool": ["-1", "SRSV_POOL_COUNT", "1000"],
    "enum srsv_flush": ["-1", "SRSV_FLUSH_MODE_COUNT", "31", "1000"],
    "enum srsv_rsv_type": ["-1", "SRSV_RSV_TYPE_COUNT", "1000"],
    "enum srsv_quota_kind": ["-1", "SRSV_QUOTA_KIND_COUNT", "1000"],
    "enum srsv_delalloc_mode": ["-1", "SRSV_DELALLOC_MODE_COUNT", "1000"],
    "enum srsv_zone_kind": ["-1", "SRSV_ZONE_KIND_COUNT", "1000"],
}

# Pointer types: their role (how the valid value is made).
POINTERS = {
    "struct srsv_ctx *": "ctx",
    "struct srsv_space *": "space",
    "struct srsv_ticket *": "ticket",
    "struct srsv_rsv *": "rsv",
    "struct srsv_quota *": "quota",
    "struct srsv_async *": "async",
    "struct srsv_zone_group *": "zone_group",
    "struct srsv_delalloc_resv *": "dresv",
    "struct srsv_config *": "config",
    "struct srsv_bgroup_config *": "bgconfig",
    "struct srsv_zoned_config *": "zconfig",
    "void *": "opaque",
}
OUT_STRUCTS = {
    "struct srsv_space_info", "struct srsv_ticket_info",
    "struct srsv_space_stats", "struct srsv_rsv_info",
    "struct srsv_quota_info", "struct srsv_bgroup_info",
    "struct srsv_bgroup_stats", "struct srsv_statfs",
    "struct srsv_zone_group_info", "struct srsv_zoned_info",
    "struct srsv_lock_stats",
}
CALLBACKS = {"srsv_async_fn"}

SIZE_NAMES = {"bytes", "length", "capacity", "min_reserved", "min", "max"}
ADDRESS_NAMES = {"bytenr", "start", "from"}

ERRNO_RE = re.compile(r"-E[A-Z0-9]+")

FUNCS = {}      # every function the headers declare (set by main())


class Fail(Exception):
    pass


def norm_type(t):
    t = re.sub(r"\s+", " ", t.strip())
    t = re.sub(r"\s*\*", " *", t)
    t = t.replace("* *", "**")
    return t


class Function:
    def __init__(self, name, ret, params, doc, header):
        self.name = name
        self.ret = ret                  # normalised return type
        self.params = params            # [(type, name)]
        self.header = header
        self.param_doc = {}             # name -> text
        self.retvals = []               # texts of the @retval lines
        self.returns = ""               # text of @return
        self.text = doc                 # the whole comment
        self.parse_doc(doc)

    def parse_doc(self, doc):
        lines = [re.sub(r"^\s*\*? ?", "", l) for l in doc.splitlines()]
        tags, cur = [], None
        for l in lines:
            m = re.match(r"@(\w+)(\[[a-z]+\])?\s*(.*)", l.strip())
            if m:
                cur = [m.group(1), m.group(3)]
                tags.append(cur)
            elif cur is not None:
                if l.strip() == "":
                    cur = None
                else:
                    cur[1] += " " + l.strip()
        for tag, body in tags:
            if tag == "param":
                name, _, desc = body.partition(" ")
                self.param_doc[name] = desc
            elif tag == "retval":
                self.retvals.append(body)
            elif tag == "return":
                self.returns = body


def parse_headers(paths):
    funcs = {}
    decl = re.compile(
        r"/\*\*((?:(?!\*/).)*?)\*/\s*"
        r"((?:SRSV_MUST_CHECK\s+)?([A-Za-z_][\w\s\*]*?)\b(srsv_\w+)\s*"
        r"\(([^;{}#]*?)\)\s*;)", re.S)
    for path in paths:
        with open(path) as f:
            text = f.read()
        for m in decl.finditer(text):
            doc, ret, name, params = m.group(1), m.group(3), m.group(4), \
                m.group(5)
            ret = norm_type(ret.replace("SRSV_MUST_CHECK", ""))
            plist = []
            p = " ".join(params.split())
            if p and p != "void":
                for item in p.split(","):
                    item = item.strip()
                    mm = re.match(r"(.*?)(\w+)$", item)
                    if not mm:
                        raise Fail("%s: cannot parse parameter %r" %
                                   (name, item))
                    plist.append((norm_type(mm.group(1)), mm.group(2)))
            funcs[name] = Function(name, ret, plist, doc, path)
    return funcs


def parse_sym(path):
    globs, explicit, state = [], [], None
    with open(path) as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    for tok in re.findall(r"[\w\*\?\[\]]+:|[^\s;{}]+", text):
        if tok == "global:":
            state = "global"
        elif tok == "local:":
            state = "local"
        elif state == "global" and not tok.endswith(":"):
            if any(c in tok for c in "*?["):
                globs.append(tok)
            elif re.match(r"^\w+$", tok):
                explicit.append(tok)
    return globs, explicit


def retval_text(fn, funcs, seen=None):
    """fn's @retval lines with those of the functions they refer to."""
    seen = seen or set()
    seen.add(fn.name)
    text = " ".join(fn.retvals + [fn.returns])
    for ref in re.findall(r"\bas (srsv_\w+)\(\)", text):
        if ref in funcs and ref not in seen:
            text += " " + retval_text(funcs[ref], funcs, seen)
    return text


def documented_errnos(fn, funcs, seen=None):
    """Negative errnos fn's @retval list (and @return) documents, with
    those of the functions it refers to ("as srsv_space_reserve()")."""
    seen = seen or set()
    seen.add(fn.name)
    errs = set()
    texts = fn.retvals + [fn.returns]
    for t in texts:
        errs.update(ERRNO_RE.findall(t))
        for ref in re.findall(r"\bas (srsv_\w+)\(\)", t):
            if ref in funcs and ref not in seen:
                errs |= documented_errnos(funcs[ref], funcs, seen)
    return errs


# ---------------------------------------------------------------------------
# Values


def zoned(fn):
    return fn.name.startswith("srsv_zone")


def param_role(fn, ptype, pname):
    """The role of a parameter, or raise Fail."""
    if ptype in CALLBACKS:
        return "callback"
    base = ptype.replace("const ", "")
    if base.endswith("**"):
        return "outptr"
    if base in POINTERS:
        return POINTERS[base]
    if base.endswith(" *"):
        if base[:-2] in OUT_STRUCTS:
            return "outstruct"
        if base in ("uint64_t *", "size_t *"):
            return "outscalar"
    if base in ENUMS:
        return "enum"
    if base in ("uint64_t", "int64_t", "size_t", "unsigned", "int", "bool"):
        return "scalar"
    raise Fail("%s: parameter %s %s: no rule for this type" %
               (fn.name, ptype, pname))


def fresh(fn, role, pname):
    """Whether @pname is an object the call initialises (a fresh local)
    rather than one of the fixture's."""
    if role == "ticket":
        return fn.name in ("srsv_ticket_reserve", "srsv_ticket_reserve_async",
                           "srsv_delalloc_reserve_async")
    if role == "dresv":
        return fn.name in ("srsv_delalloc_reserve",
                           "srsv_delalloc_reserve_async")
    if role == "rsv":
        return fn.name == "srsv_rsv_init"
    if role in ("config", "bgconfig", "zconfig"):
        return fn.name.endswith("config_init") or \
            fn.name.endswith("config_init_sized")
    return False


class Arg:
    """One argument of one probe: its declaration (locals) and value."""

    def __init__(self, decl, valid):
        self.decl = decl      # C declaration of the locals it needs, or ""
        self.valid = valid    # the C expression of a valid value


def valid_arg(fn, i, ptype, pname, role):
    n = "a%d" % i
    over = PARAMS.get((fn.name, pname), {})
    if "valid" in over:
        return Arg("", over["valid"])
    base = ptype.replace("const ", "")
    if role == "ctx":
        return Arg("", "f->zctx" if zoned(fn) else "f->ctx")
    if role == "space":
        return Arg("", "f->md")
    if role == "quota":
        return Arg("", "f->quota")
    if role == "async":
        return Arg("", "f->q")
    if role == "zone_group":
        return Arg("", "f->zg")
    if role == "opaque":
        return Arg("", "NULL")
    if role == "callback":
        return Arg("", "NULL")
    if role == "ticket":
        if fresh(fn, role, pname):
            return Arg("struct srsv_ticket %s;\n\tmemset(&%s, 0, sizeof(%s));"
                       % (n, n, n), "&" + n)
        return Arg("", "&f->ticket")
    if role == "dresv":
        if fresh(fn, role, pname):
            return Arg("struct srsv_delalloc_resv %s;\n\tmemset(&%s, 0, "
                       "sizeof(%s));" % (n, n, n), "&" + n)
        return Arg("", "&f->dresv")
    if role == "rsv":
        if fresh(fn, role, pname):
            return Arg("struct srsv_rsv %s;\n\tmemset(&%s, 0, sizeof(%s));"
                       % (n, n, n), "&" + n)
        rsvs = [p for p in fn.params if param_role(fn, p[0], p[1]) == "rsv"]
        if len(rsvs) > 1 and rsvs.index((ptype, pname)) == 1:
            return Arg("", "&f->rsv2")
        return Arg("", "&f->rsv")
    if role in ("config", "bgconfig", "zconfig"):
        struct = {"config": "srsv_config", "bgconfig": "srsv_bgroup_config",
                  "zconfig": "srsv_zoned_config"}[role]
        if fresh(fn, role, pname):
            return Arg("struct %s %s;\n\tmemset(&%s, 0, sizeof(%s));" %
                       (struct, n, n, n), "&" + n)
        return Arg("", {"config": "&f->cfg", "bgconfig": "&f->bgcfg",
                        "zconfig": "&f->zcfg"}[role])
    if role == "outstruct":
        struct = base[:-2]
        if struct == "struct srsv_ticket_info":
            return Arg("%s %s[4];\n\tmemset(%s, 0, sizeof(%s));" %
                       (struct, n, n, n), n)
        return Arg("%s %s;\n\tmemset(&%s, 0, sizeof(%s));" % (struct, n, n, n),
                   "&" + n)
    if role == "outptr":
        if pname == "done":             # srsv_async_reap's array
            return Arg("struct srsv_ticket *%s[4] = { NULL };" % n, n)
        return Arg("%s %s = NULL;" % (base[:-1].strip(), n), "&" + n)
    if role == "outscalar":
        return Arg("%s %s = 0;" % (base[:-1].strip(), n), "&" + n)
    if role == "enum":
        return Arg("", {
            "enum srsv_pool": "SRSV_POOL_DATA" if "bgroup" in fn.name or
                              "reclaim" in fn.name else "SRSV_POOL_METADATA",
            "enum srsv_flush": "SRSV_NO_FLUSH",
            "enum srsv_rsv_type": "SRSV_RSV_TEMP"
                                  if fn.name == "srsv_rsv_init"
                                  else "SRSV_RSV_GLOBAL",
            "enum srsv_quota_kind": "SRSV_QUOTA_DATA",
            "enum srsv_delalloc_mode": "SRSV_DELALLOC_NOFLUSH",
            "enum srsv_zone_kind": "SRSV_ZONE_DATA",
        }[base])
    # scalars
    if base == "bool":
        return Arg("", "false")
    if base == "int64_t":
        return Arg("", "0")
    if base == "uint64_t":
        if pname in SIZE_NAMES:
            return Arg("", "4 * SWEEP_KIB")
        if pname in ADDRESS_NAMES:
            return Arg("", "f->zg_start" if zoned(fn) else "f->bg_start")
        if pname == "timeout_ns":
            return Arg("", "1000000")
        if pname == "limit":
            return Arg("", "8 * SWEEP_MIB")
        if pname == "id":
            return Arg("", "1")
    if base == "size_t":
        if pname == "size" or pname.endswith("_size"):
            return Arg("", sized_of(fn, pname))
    if base == "unsigned":
        if pname == "flags":
            return Arg("", "0")
        if pname == "min_percent":
            return Arg("", "50")
    if base == "int":
        if pname == "state":
            return Arg("", "SRSV_STATE_COMMIT_TRANS")
        if pname in ("kind", "mode"):
            return Arg("", "0")
        if pname == "error":
            return Arg("", "-EIO")
        if pname == "result":
            return Arg("", "0")
    raise Fail("%s: parameter %s %s: no valid value (add it to PARAMS)" %
               (fn.name, ptype, pname))


def sized_of(fn, pname):
    """sizeof the struct a *_sized function's @pname describes."""
    outs = [p for p in fn.params
            if p[0].replace("const ", "").endswith(" *") and
            (p[0].replace("const ", "")[:-2] in OUT_STRUCTS or
             p[0].replace("const ", "") in ("struct srsv_config *",))]
    if pname == "ticket_size":
        return "sizeof(struct srsv_ticket_info)"
    if pname == "info_size":
        return "sizeof(struct srsv_space_info)"
    if len(outs) == 1:
        return "sizeof(%s)" % outs[0][0].replace("const ", "")[:-2]
    raise Fail("%s: %s: which struct it sizes is not clear" % (fn.name, pname))


def bad_values(fn, ptype, pname, role):
    """[(value, kind)] for a scalar or enum parameter."""
    over = PARAMS.get((fn.name, pname), {})
    base = ptype.replace("const ", "")
    doc = fn.param_doc.get(pname, "")
    rv = retval_text(fn, FUNCS)
    if "bad" in over:
        return [(v, "invalid") for v in over["bad"]]
    if role == "enum":
        return [(v, "invalid") for v in ENUMS[base]]
    if base == "bool":
        return []
    if base == "int64_t":
        return [("INT64_MIN", "invalid")]
    if base == "uint64_t":
        if pname == "timeout_ns":
            zero = "invalid" if "timeout 0" in rv else "extreme"
            return [("0", zero), ("UINT64_MAX", "extreme")]
        if pname == "limit":
            return [("SRSV_MAX_BYTES + 1", "invalid")]
        if pname in ADDRESS_NAMES:
            return [("UINT64_MAX", "invalid")]
        if pname == "id":
            return []
        if pname in SIZE_NAMES:
            out = [("UINT64_MAX", "invalid"), ("SRSV_MAX_BYTES + 1",
                                               "invalid")]
            if re.search(r"0 is a no-op|0 reserves nothing|\(0 is a no-op",
                         doc):
                out.append(("0", "noop"))
            elif re.search(r"\(> 0\)|> 0", doc) or \
                    re.search(r"\b0 (bytes|length)\b|zero (length|bytes)|"
                              r"\b0 bytes\b", rv):
                out.append(("0", "invalid"))
            return out
    if base == "size_t" and (pname == "size" or pname.endswith("_size")):
        return [("0", "invalid"), ("1", "invalid")]
    if base == "unsigned":
        if pname == "flags":
            return [("1u << 30", "invalid")]
        if pname == "min_percent":
            return [("101", "invalid")]
    if base == "int":
        if pname == "state":
            return [("-1", "invalid"), ("SRSV_STATE_COUNT", "invalid"),
                    ("1000", "invalid")]
        if pname in ("kind", "mode"):
            return [("-1", "invalid"), ("1000", "invalid")]
        if pname == "error":
            return [("0", "invalid"), ("1", "invalid")]
        if pname == "result":
            return [("1", "invalid")]
    raise Fail("%s: parameter %s %s: no out-of-range values (add it to "
               "PARAMS)" % (fn.name, ptype, pname))


def null_kind(fn, pname, role):
    """How a NULL for @pname is judged, or None (no NULL probe)."""
    over = PARAMS.get((fn.name, pname), {})
    if "null" in over:
        return over["null"]
    if role in ("opaque", "callback"):
        return None             # the caller's own pointer / an optional fn
    doc = fn.param_doc.get(pname, "")
    if re.search(r"NULL: no-op|NULL is a no-op", doc + " " + fn.text):
        return "noop"
    if re.search(r"\bmay be NULL\b|\bor NULL\b|NULL for none", doc) and \
            "must not be NULL" not in doc:
        return "extreme"
    return "invalid"


# ---------------------------------------------------------------------------
# Return values


def ret_spec(fn):
    """(C result field, sweep_ret, neutral_u64) or raise Fail."""
    sp = SPECIAL.get(fn.name, {})
    kind = sp.get("ret")
    r = fn.ret
    if kind is None:
        if r == "int":
            kind = "int"
        elif r == "void":
            kind = "void"
        elif r == "const char *":
            if "unknown" not in fn.returns and fn.params:
                raise Fail("%s: returns a string but documents no neutral "
                           "value" % fn.name)
            kind = "name"
        elif r.endswith("*"):
            if "NULL" not in fn.returns:
                raise Fail("%s: returns a pointer but documents no NULL "
                           "(add it to SPECIAL)" % fn.name)
            kind = "ptr"
        elif r == "uint64_t":
            m = re.search(r"\b(\d+) for NULL", fn.returns)
            if not m:
                raise Fail("%s: returns %s with no documented neutral value "
                           "(add it to SPECIAL)" % (fn.name, r))
            kind = "u64"
            sp = dict(sp, neutral=m.group(1))
        else:
            raise Fail("%s: return type %s: no rule" % (fn.name, r))
    return kind, sp.get("neutral", "0")


# ---------------------------------------------------------------------------
# Emitting C


def c_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def probes_of(fn, funcs):
    """[(what, kind, {param index: value})]"""
    if not fn.params:
        return [("no argument", "extreme", {})]
    out = []
    for i, (ptype, pname) in enumerate(fn.params):
        role = param_role(fn, ptype, pname)
        if ptype.endswith("*") or role in ("callback", "opaque"):
            k = null_kind(fn, pname, role)
            if k:
                out.append(("%s = NULL" % pname, k, {i: "NULL"}))
        else:
            for v, k in bad_values(fn, ptype, pname, role):
                out.append(("%s = %s" % (pname, v), k, {i: v}))
    for name, vals, k, what in EXTRA:
        if name == fn.name:
            idx = {i: vals[p] for i, (_, p) in enumerate(fn.params)
                   if p in vals}
            out.append((what, k, idx))
    if not out:
        raise Fail("%s: no probe (no pointer or bounded argument): add one "
                   "to EXTRA" % fn.name)
    return out


def emit(funcs, exported, out):
    body, table, errtabs = [], [], []
    n = 0
    for name in exported:
        fn = funcs[name]
        errs = sorted(documented_errnos(fn, funcs) |
                      set(SPECIAL.get(name, {}).get("errnos", [])))
        errtab = "doc_%s" % name
        errtabs.append("static const int %s[] = { %s };" %
                       (errtab, ", ".join(errs + ["0"])))
        retkind, neutral = ret_spec(fn)
        counts = fn.ret == "int" and bool(fn.returns) and \
            not re.match(r"\s*0 or", fn.returns)
        for what, kind, values in probes_of(fn, funcs):
            decls, args = [], []
            for i, (ptype, pname) in enumerate(fn.params):
                role = param_role(fn, ptype, pname)
                a = valid_arg(fn, i, ptype, pname, role)
                if i in values:
                    v = values[i]
                    if ptype.replace("const ", "").startswith("enum "):
                        v = "(%s)(%s)" % (ptype.replace("const ", ""), v)
                    args.append(v)
                else:
                    if a.decl:
                        decls.append(a.decl)
                    args.append(a.valid)
            call = "(%s)(%s)" % (name, ", ".join(args))
            if retkind == "void":
                stmt = "%s;" % call
            elif retkind == "ptr":
                stmt = "r->ptr = %s;" % call
            elif retkind == "name":
                stmt = "r->name = %s;" % call
            else:
                stmt = "r->ret = (int64_t)%s;" % call
            body.append("/* %s(%s) */\nstatic void probe_%d(struct "
                        "sweep_fixture *f, struct sweep_result *r)\n{\n"
                        "%s\t(void)f;\n\t(void)r;\n\t%s\n}\n" %
                        (name, what, n,
                         "".join("\t%s\n" % d for d in decls), stmt))
            table.append("\t{ %s, %s, SWEEP_%s, SWEEP_RET_%s, %s, %s, "
                         "%s, probe_%d }," %
                         (c_str(name), c_str(what), kind.upper(),
                          retkind.upper(), errtab,
                          "true" if counts else "false",
                          "UINT64_C(%s)" % neutral, n))
            n += 1
    tests = []
    for i, name in enumerate(exported):
        tests.append("START_TEST(sweep_%d)\n{\n\tchar why[1500];\n"
                     "\tunsigned failed = sweep_run_function(%s, why, "
                     "sizeof(why));\n\n\tck_assert_msg(failed == 0, "
                     "\"%%s: %%u probe(s) failed: %%s\", %s, failed, why);"
                     "\n}\nEND_TEST\n" % (i, c_str(name), c_str(name)))
    adds = "".join("\ttcase_add_test(tc, sweep_%d);\n" % i
                   for i in range(len(exported)))
    with open(out, "w") as f:
        f.write("""/* Generated by tests/gen-sweep.py from the public headers: do not edit.
 * %d exported functions, %d probes. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sweep.h"

%s

%s
const struct sweep_probe sweep_probes[] = {
%s
};
const size_t sweep_nr_probes = sizeof(sweep_probes) / sizeof(sweep_probes[0]);

const char *const sweep_functions[] = {
%s
};
const size_t sweep_nr_functions =
	sizeof(sweep_functions) / sizeof(sweep_functions[0]);

%s
/* The runner itself can fail (sweep.c). */
START_TEST(sweep_runner_selftest)
{
	char why[1500];
	unsigned wrong = sweep_selftest(why, sizeof(why));

	ck_assert_msg(wrong == 0, "the runner misjudged %%u probe(s): %%s", wrong,
		      why);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sweep");
	TCase *tc = tcase_create("sweep");
	TCase *self = tcase_create("selftest");
	SRunner *sr;
	int failed;

	tcase_set_timeout(self, 120);
	tcase_add_test(self, sweep_runner_selftest);
	suite_add_tcase(s, self);

	/* Each probe has its own deadline (sweep.c); this bounds the lot. */
	tcase_set_timeout(tc, 600);
%s	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	setvbuf(stdout, NULL, _IOLBF, 0);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
""" % (len(exported), n, "\n".join(errtabs), "\n".join(body),
            "\n".join(table),
            "\n".join("\t%s," % c_str(x) for x in exported),
            "\n".join(tests), adds))
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sym", required=True)
    ap.add_argument("--out")
    ap.add_argument("--check", action="store_true",
                    help="classify only, write nothing")
    ap.add_argument("headers", nargs="+")
    args = ap.parse_args()
    global FUNCS
    try:
        funcs = FUNCS = parse_headers(args.headers)
        globs, explicit = parse_sym(args.sym)
        if not globs and not explicit:
            raise Fail("%s: no exported name or pattern" % args.sym)
        missing = [e for e in explicit if e not in funcs]
        if missing:
            raise Fail("exported by %s but declared in no public header: %s"
                       % (args.sym, ", ".join(missing)))
        exported = sorted(n for n in funcs
                          if n in explicit or
                          any(fnmatch.fnmatchcase(n, g) for g in globs))
        errors = []
        for name in exported:
            try:
                fn = funcs[name]
                ret_spec(fn)
                for i, (ptype, pname) in enumerate(fn.params):
                    role = param_role(fn, ptype, pname)
                    valid_arg(fn, i, ptype, pname, role)
                probes_of(fn, funcs)
            except Fail as e:
                errors.append(str(e))
        stale = sorted(({k[0] for k in PARAMS} | set(SPECIAL) |
                        {e[0] for e in EXTRA}) - set(exported))
        for name in stale:
            errors.append("%s: a table entry for a function that is not "
                          "exported (any more)" % name)
        if errors:
            raise Fail("%d exported function(s) the sweep cannot cover:\n  %s"
                       % (len(errors), "\n  ".join(errors)))
        if args.check:
            print("%d exported functions, all covered" % len(exported))
            return 0
        if not args.out:
            raise Fail("--out is required")
        n = emit(funcs, exported, args.out)
        print("sweep: %d exported functions, %d probes" % (len(exported), n))
    except Fail as e:
        sys.stderr.write("gen-sweep.py: %s\n" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
