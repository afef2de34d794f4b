/* SPDX-License-Identifier: MIT */
/*
 * ukp_file.h - FILE.ukp, what `ukprobe trace -o FILE.ukp` writes and
 * `ukprobe report` reads (as perf.data for perf record and perf report).
 *
 *   struct ukf_header, then hdr_len bytes of text, "key=value" lines:
 *     tool=ukprobe VERSION
 *     def=DEFINITION            one per definition, in event order
 *     hist=NAME                 --hist
 *     latency=1, unit=NAME, unit_div=N   ukprobe latency
 *     count=1, events=0|1       what the run asked for
 *   then chunks, each a struct ukf_chunk and len bytes:
 *     UKF_RECORDS  the records of one ring as they were in it (ring.h),
 *                  pid and tid its owner's, kind RING_DATA or RING_META;
 *                  records are whole, REC_PAD records are to be skipped
 *     UKF_LOST     a loss outside any ring (no free ring): u64 count
 *     UKF_SUMMARY  the shared counters at the end (struct uks up to its
 *                  rings): counts, histograms, misses, drops
 * The command writes whole chunks only, so a file cut short (a full disk,
 * a killed command) still reads up to its last whole chunk.
 */
#ifndef UKPROBE_UKP_FILE_H
#define UKPROBE_UKP_FILE_H

#include <stdint.h>

#define UKF_MAGIC	"UKPROBE\0"
#define UKF_VERSION	1u
#define UKF_CHUNK_MAGIC	0x4b43554bu	/* "UKCK" */

struct ukf_header {
	char magic[8];
	uint32_t version;
	uint32_t hdr_len;
};

enum { UKF_RECORDS = 1, UKF_LOST, UKF_SUMMARY };

struct ukf_chunk {
	uint32_t magic;
	uint32_t type;		/* UKF_* */
	int32_t pid, tid;
	uint32_t kind;		/* UKF_RECORDS: RING_DATA or RING_META */
	uint32_t pad;
	uint64_t len;
};

struct uks;

/* The header (text as above), a loss outside the rings, the counters at
 * the end.  0 or -1 (errno). */
int ukp_write_header(int fd, const char *text);
void ukp_write_lost(int fd, int pid, uint64_t n);
int ukp_write_summary(int fd, const struct uks *shm);

#endif
