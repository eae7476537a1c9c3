/* SPDX-License-Identifier: MIT */
/*
 * Utilities every layer of the library may use: the export macro, sizes,
 * min/max, the intrusive list, and the atomic-word helpers.  Nothing here
 * knows a library structure (libevdev-util.h's place).
 */
#ifndef SRSV_UTIL_H
#define SRSV_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <atomic_ops.h>

#define SRSV__EXPORT __attribute__((visibility("default")))

/*
 * A public call the library makes where it cannot fail (it gives back
 * bytes it holds), or where a failure has no one to go to: the result is
 * dropped on purpose.  "(void)!" because gcc's warn_unused_result
 * (SRSV_MUST_CHECK) ignores a plain (void) cast.
 */
#define srsv__discard(call) ((void)!(call))

#define SZ_1M (UINT64_C(1) << 20)
#define SZ_128M (UINT64_C(128) << 20)
#define SZ_256M (UINT64_C(256) << 20)
#define SZ_1G (UINT64_C(1) << 30)

#define SRSV__CACHELINE 64

/*
 * Each argument is evaluated once, like the kernel's min()/max(): an
 * argument may load a word other threads change lock-free (an rsv's
 * reserved), and evaluating it again for the result could return a value
 * the comparison never saw (rsv.c, the spill in srsv_rsv_release()).
 */
#define srsv__min(a, b) ({ __typeof__(a) srsv__a_ = (a);		\
			   __typeof__(b) srsv__b_ = (b);		\
			   srsv__a_ < srsv__b_ ? srsv__a_ : srsv__b_; })
#define srsv__max(a, b) ({ __typeof__(a) srsv__a_ = (a);		\
			   __typeof__(b) srsv__b_ = (b);		\
			   srsv__a_ > srsv__b_ ? srsv__a_ : srsv__b_; })
#define SRSV__ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* @value * @percent / 100 without overflow (btrfs's mult_perc). */
static inline uint64_t srsv__mult_perc(uint64_t value, unsigned percent)
{
	return value / 100 * percent + value % 100 * percent / 100;
}

/* @a + @b, or UINT64_MAX where that wraps. */
static inline uint64_t srsv__sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;	/* the carry: add, cmov */
}

_Static_assert(sizeof(AO_t) >= sizeof(uint64_t),
	       "libspacersv needs 64-bit atomic words");

/* Intrusive doubly linked list (tickets, zone lists). */
struct srsv__list {
	struct srsv__list *next, *prev;
};

static inline void srsv__list_init(struct srsv__list *h)
{
	h->next = h->prev = h;
}

static inline bool srsv__list_empty(const struct srsv__list *h)
{
	return h->next == h;
}

static inline void srsv__list_add_tail(struct srsv__list *n,
				       struct srsv__list *h)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

static inline void srsv__list_del_init(struct srsv__list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	srsv__list_init(n);
}

#define srsv__container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

static inline uint64_t srsv__ld(const volatile AO_t *p)
{
	return (uint64_t)AO_load((volatile AO_t *)p);
}

static inline void srsv__st(volatile AO_t *p, uint64_t v)
{
	AO_store(p, (AO_t)v);
}

/*
 * Lock-free decrease of a counter word that refuses underflow: false, and
 * the word unchanged, when it holds less than @bytes.  Full barrier on
 * success (the compare-and-swap).
 */
static inline bool srsv__ao_sub_checked(volatile AO_t *w, uint64_t bytes)
{
	AO_t old;

	do {
		old = AO_load(w);
		if ((uint64_t)old < bytes)
			return false;
	} while (!AO_compare_and_swap_full(w, old, old - (AO_t)bytes));
	return true;
}

/* Take the whole word (leave 0); returns what it held.  Full barrier. */
static inline uint64_t srsv__ao_take_all(volatile AO_t *w)
{
	AO_t old;

	do {
		old = AO_load(w);
	} while (old && !AO_compare_and_swap_full(w, old, 0));
	return (uint64_t)old;
}

/* Set @bits in @word (full barrier when it changes). */
static inline void srsv__ao_set_bits(volatile AO_t *word, AO_t bits)
{
	AO_t old;

	do {
		old = AO_load(word);
		if ((old & bits) == bits)
			return;
	} while (!AO_compare_and_swap_full(word, old, old | bits));
}

/*
 * Output structs (docs/api.md, "output structs"): the caller passes its
 * sizeof; the library refuses a size below the struct's first layout,
 * which ends at member @last (checked before the call does anything), and
 * copies at most the caller's size of its own whole struct @all, whose
 * member @sz says how many bytes were filled.
 */
#define SRSV__OUT_MIN(type, last) \
	(offsetof(type, last) + sizeof(((type *)0)->last))
#define SRSV__OUT_COPY(dst, all, sz, size) do {				\
	size_t n_ = (size) < sizeof(all) ? (size) : sizeof(all);	\
	(all).sz = n_;							\
	memcpy((dst), &(all), n_);					\
} while (0)

#endif /* SRSV_UTIL_H */
