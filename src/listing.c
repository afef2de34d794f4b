// SPDX-License-Identifier: MIT
/*
 * listing.c - the debugfs files of the kernel, as calls: the probe list
 * (/sys/kernel/debug/kprobes/list) and the blacklist.
 */
#include <errno.h>
#include <stdio.h>

#include "internal.h"
#include "symbols.h"

struct ukp_list_ctx {
	FILE *out;
	int lines;
};

static void ukp_list_point(struct ukp_point *pt, void *arg)
{
	struct ukp_list_ctx *ctx = arg;

	ukp_for_each_probe(p, pt) {
		/* "%px  %s  %s+0x%x  %s" then the state flags, as report_probe() */
		char type = p->pre_handler == ukp_kretprobe_pre_handler ? 'r' :
			    p->pre_handler == ukp_jprobe_pre_handler ? 'j' : 'k';

		fprintf(ctx->out, "%016lx  %c  ", (unsigned long)pt->addr, type);
		if (pt->sym)
			fprintf(ctx->out, "%s:%s+0x%lx  ", pt->object ? pt->object : "?",
				pt->sym, pt->symoff);
		else if (pt->object)
			fprintf(ctx->out, "%s:0x%lx  ", pt->object, pt->symoff);
		else
			fprintf(ctx->out, "0x%lx  ", (unsigned long)pt->addr);
		fprintf(ctx->out, "%s%s%s%s\n",
			kprobe_gone(p) ? "[GONE]" : "",
			(kprobe_disabled(p) && !kprobe_gone(p)) ? "[DISABLED]" : "",
			kprobe_optimized(p) ? "[OPTIMIZED]" : "",
			(p->flags & KPROBE_FLAG_FTRACE) ? "[FTRACE]" : "");
		ctx->lines++;
	}
}

UKP_API int ukprobes_print_list(FILE *out)
{
	struct ukp_list_ctx ctx = { out, 0 };

	if (!out)
		return -EINVAL;
	pthread_mutex_lock(&ukp_kprobe_mutex);
	ukp_check_gone();
	ukp_point_foreach(ukp_list_point, &ctx);
	pthread_mutex_unlock(&ukp_kprobe_mutex);
	return ctx.lines;
}

static void ukp_bl_line(uintptr_t start, uintptr_t end, const char *name, void *arg)
{
	struct ukp_list_ctx *ctx = arg;

	fprintf(ctx->out, "0x%016lx-0x%016lx\t%s\n", (unsigned long)start,
		(unsigned long)end, name ? name : "?");
	ctx->lines++;
}

UKP_API int ukprobes_print_blacklist(FILE *out)
{
	struct ukp_list_ctx ctx = { out, 0 };

	if (!out)
		return -EINVAL;
	pthread_mutex_lock(&ukp_kprobe_mutex);
	ukp_symbols_refresh();
	pthread_mutex_unlock(&ukp_kprobe_mutex);
	ukp_blacklist_foreach(ukp_bl_line, &ctx);
	return ctx.lines;
}
