/* SPDX-License-Identifier: MIT */
#include "abifx.h"

int abifx_get(struct abifx_obj *obj)
{
	return obj->a;
}
#ifdef ABIFX_ADD
int abifx_added(void)
{
	return 1;
}
#endif
#ifndef ABIFX_REMOVE
int abifx_old(void)
{
	return 0;
}
#endif
