/* SPDX-License-Identifier: MIT */
/* Fixture of the ABI check's self-test (check-abi-selftest.sh): version 1
 * of a tiny library, and the changes the check must accept or refuse. */
#ifndef ABIFX_H
#define ABIFX_H

struct abifx_obj {
	int a;
#ifdef ABIFX_GROW
	long b;		/* callers that allocate the struct now overflow it */
#endif
};

int abifx_get(struct abifx_obj *obj);
#ifdef ABIFX_ADD
int abifx_added(void);	/* a new function: compatible */
#endif
#ifndef ABIFX_REMOVE
int abifx_old(void);	/* removing it breaks its callers */
#endif

#endif
