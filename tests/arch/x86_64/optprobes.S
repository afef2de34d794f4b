/* SPDX-License-Identifier: MIT */
/*
 * optprobes.S - targets for the jump-optimization tests (optprobes.c).
 * Every function has symbol bounds (FUNC/END), so that the optimizer can
 * decode it whole; LABEL marks probe points and expected addresses.  The
 * byte counts in comments are the instruction lengths the regions rely on.
 */
#include "scn_asm.h"

	.text

/* ---------------------------------------------------------------------- */
/* Eligible regions                                                        */
/* ---------------------------------------------------------------------- */

/* long opt_basic(long x): (x + 7) * 3.  Region at the entry: mov + add. */
FUNC(opt_basic)
LABEL(opt_basic_p)
	mov	%rdi, %rax		/* 3 */
LABEL(opt_basic_2)
	add	$7, %rax		/* 4 */
LABEL(opt_basic_3)
	imul	$3, %rax, %rax		/* 4 */
	ret
END(opt_basic)

/* long opt_load(long x): x + 1.  The load tests' target. */
FUNC(opt_load)
LABEL(opt_load_p)
	mov	%rdi, %rax		/* 3 */
	add	$1, %rax		/* 4 */
	ret
END(opt_load)

/* long opt_load2(long x): x * 2.  A second target for the load tests. */
FUNC(opt_load2)
LABEL(opt_load2_p)
	lea	(%rdi,%rdi), %rax	/* 4 */
	nop				/* 1 */
	nop
	ret
END(opt_load2)

/* long opt_rip(long x): x + opt_rip_data; the RIP-relative load is the
 * region's second instruction. */
FUNC(opt_rip)
LABEL(opt_rip_p)
	mov	%rdi, %rax		/* 3 */
	add	opt_rip_data(%rip), %rax /* 7, RIP-relative */
	ret
END(opt_rip)

/* long opt_rip1(long x): opt_rip_data + x; one 7-byte RIP-relative load. */
FUNC(opt_rip1)
LABEL(opt_rip1_p)
	mov	opt_rip_data(%rip), %rax /* 7 */
	add	%rdi, %rax
	ret
END(opt_rip1)

/* long opt_ripst(long x): stores x + 5 to opt_rip_store (RIP-relative
 * store, 2nd of the region) and returns the address it stored to (lea). */
FUNC(opt_ripst)
LABEL(opt_ripst_p)
	lea	5(%rdi), %rcx		/* 4 */
	mov	%rcx, opt_rip_store(%rip) /* 7 */
	lea	opt_rip_store(%rip), %rax
	ret
END(opt_ripst)

/* long opt_jcc(long x): x >= 0 ? x + 1 : x - 1; js out of the region. */
FUNC(opt_jcc)
LABEL(opt_jcc_p)
	test	%rdi, %rdi		/* 3 */
	js	1f			/* 2 */
	lea	1(%rdi), %rax
	ret
1:	lea	-1(%rdi), %rax
	ret
END(opt_jcc)

/* long opt_jmp(long x): x + 1; a short jmp out of the region. */
FUNC(opt_jmp)
LABEL(opt_jmp_p)
	mov	%rdi, %rax		/* 3 */
	jmp	1f			/* 2 */
	add	$100, %rax
1:	add	$1, %rax
	ret
END(opt_jmp)

/* long opt_loop(long n >= 1): 2n.  The region (add; dec) is followed by a
 * jnz back to before the probe: n hits per call. */
FUNC(opt_loop)
	xor	%eax, %eax
1:	nop
LABEL(opt_loop_p)
	add	$2, %rax		/* 4 */
	dec	%rdi			/* 3 */
	jnz	1b
	ret
END(opt_loop)

/* long opt_loop3(long n >= 1): n.  The region (dec; jnz) ends with a jnz
 * back to the probe itself: n hits per call. */
FUNC(opt_loop3)
	mov	%rdi, %rax
LABEL(opt_loop3_p)
	dec	%rdi			/* 3 */
	jnz	opt_loop3_p		/* 2 */
	ret
END(opt_loop3)

/* ---------------------------------------------------------------------- */
/* Regions that must be refused                                            */
/* ---------------------------------------------------------------------- */

/* long opt_jin(long x, long skip): skip ? x + 5 : 2x + 5.  A jump from
 * before the probe lands on the region's second instruction. */
FUNC(opt_jin)
	mov	%rdi, %rax
	test	%rsi, %rsi
	jnz	opt_jin_mid
LABEL(opt_jin_p)
	add	%rax, %rax		/* 3 */
LABEL(opt_jin_mid)
	add	$5, %rax		/* 4 */
	ret
END(opt_jin)

/* long opt_ind(long x): a jump table on x & 3 -> 10 + (x & 3) + 0x1000.
 * The function has an indirect jmp: a multi-instruction region in it is
 * refused; opt_ind_big (one 6-byte instruction) needs no function check. */
FUNC(opt_ind)
LABEL(opt_ind_p)
	mov	%rdi, %rax		/* 3 */
	and	$3, %rax		/* 4 */
	lea	opt_ind_tab(%rip), %rdx
	movslq	(%rdx,%rax,4), %rax
	add	%rdx, %rax
	jmp	*%rax
2:	mov	$10, %eax
	jmp	9f
3:	mov	$11, %eax
	jmp	9f
4:	mov	$12, %eax
	jmp	9f
5:	mov	$13, %eax
9:
LABEL(opt_ind_big)
	add	$0x1000, %rax		/* 6: 48 05 imm32 */
	ret
END(opt_ind)

	.section .rodata
	.p2align 2
opt_ind_tab:
	.long	2b - opt_ind_tab, 3b - opt_ind_tab, 4b - opt_ind_tab, 5b - opt_ind_tab
	.text

/* long opt_call(long x): x + 1 through a call inside the region. */
FUNC(opt_call)
LABEL(opt_call_p)
	mov	%rdi, %rax		/* 3 */
LABEL(opt_call_c)
	call	opt_helper_inc		/* 5 */
	ret
END(opt_call)

FUNC(opt_helper_inc)
	add	$1, %rax
	ret
END(opt_helper_inc)

/* long opt_icall(long x, long (*f)(long)): f(x) + 1, an indirect call in
 * the region. */
FUNC(opt_icall)
LABEL(opt_icall_p)
	sub	$8, %rsp		/* 4 */
	call	*%rsi			/* 2 */
	add	$8, %rsp
	add	$1, %rax
	ret
END(opt_icall)

/* long opt_short(long x): x; four bytes, so a 5-byte jump would cross the
 * function's end. */
FUNC(opt_short)
LABEL(opt_short_p)
	mov	%rdi, %rax		/* 3 */
	ret				/* 1 */
END(opt_short)

/* long opt_sys(void): getpid() by a syscall inside the region. */
FUNC(opt_sys)
LABEL(opt_sys_p)
	xor	%eax, %eax		/* 2 */
	mov	$39, %al		/* 2 */
	syscall				/* 2 */
	ret
END(opt_sys)

/* long opt_loopi(long n >= 1): 2n, with a loop instruction in the region. */
FUNC(opt_loopi)
	mov	%rdi, %rcx
	xor	%eax, %eax
LABEL(opt_loopi_p)
	add	$2, %rax		/* 4 */
	loop	opt_loopi_p		/* 2 */
	ret
END(opt_loopi)

/* long opt_endbr(long x): x + 1, an endbr64 inside the region. */
FUNC(opt_endbr)
LABEL(opt_endbr_p)
	mov	%rdi, %rax		/* 3 */
	endbr64				/* 4 */
	add	$1, %rax
	ret
END(opt_endbr)

/* long opt_endbr_first(long x): x + 2, endbr64 first (-fcf-protection's
 * entries), probed at the endbr64 itself. */
FUNC(opt_endbr_first)
LABEL(opt_endbr_first_p)
	endbr64				/* 4 */
	lea	1(%rdi), %rax		/* 4 */
	add	$1, %rax
	ret
END(opt_endbr_first)

/* long opt_nb(long x): (x + 7) * 3, for the neighbour-probe test. */
FUNC(opt_nb)
LABEL(opt_nb_p)
	mov	%rdi, %rax		/* 3 */
LABEL(opt_nb_2)
	add	$7, %rax		/* 4 */
	imul	$3, %rax, %rax		/* 4 */
	ret
END(opt_nb)

/* ---------------------------------------------------------------------- */
/* Pre handler redirection                                                 */
/* ---------------------------------------------------------------------- */

/* long opt_redir(long x): x + 1; opt_redir_alt returns x + 1000. */
FUNC(opt_redir)
LABEL(opt_redir_p)
	mov	%rdi, %rax		/* 3 */
	add	$1, %rax		/* 4 */
	ret
LABEL(opt_redir_alt)
	lea	1000(%rdi), %rax
	ret
END(opt_redir)

/* ---------------------------------------------------------------------- */
/* Register state                                                          */
/* ---------------------------------------------------------------------- */

/* void opt_vec_xmm(const void *in, void *out): xmm0-15 (SSE encoding) from
 * in[16][16], through the probe, to out. */
FUNC(opt_vec_xmm)
	.irp r, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	movdqu	\r*16(%rdi), %xmm\r
	.endr
LABEL(opt_vec_xmm_p)
	mov	%rdi, %rax		/* 3 */
	mov	%rsi, %rdx		/* 3 */
	.irp r, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	movdqu	%xmm\r, \r*16(%rdx)
	.endr
	ret
END(opt_vec_xmm)

/* void opt_vec_ymm(const void *in, void *out): ymm0-15 from in[16][32]. */
FUNC(opt_vec_ymm)
	.irp r, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	vmovdqu	\r*32(%rdi), %ymm\r
	.endr
LABEL(opt_vec_ymm_p)
	mov	%rdi, %rax		/* 3 */
	mov	%rsi, %rdx		/* 3 */
	.irp r, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	vmovdqu	%ymm\r, \r*32(%rdx)
	.endr
	vzeroupper
	ret
END(opt_vec_ymm)

/* void opt_vec_zmm(const void *in, void *out): zmm0-31 from in[32][64],
 * then k0-k7 from in[2048 + 8k]; out in the same layout.  AVX-512 only. */
FUNC(opt_vec_zmm)
	.irp r, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	vmovdqu64 \r*64(%rdi), %zmm\r
	.endr
	.irp k, 0,1,2,3,4,5,6,7
	kmovq	2048+\k*8(%rdi), %k\k
	.endr
LABEL(opt_vec_zmm_p)
	mov	%rdi, %rax		/* 3 */
	mov	%rsi, %rdx		/* 3 */
	.irp r, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	vmovdqu64 %zmm\r, \r*64(%rdx)
	.endr
	.irp k, 0,1,2,3,4,5,6,7
	kmovq	%k\k, 2048+\k*8(%rdx)
	.endr
	vzeroupper
	ret
END(opt_vec_zmm)

/* void opt_x87(const double *in, double *out): three values live on the
 * x87 stack across the probe. */
FUNC(opt_x87)
	fldl	0(%rdi)
	fldl	8(%rdi)
	fldl	16(%rdi)
LABEL(opt_x87_p)
	mov	%rdi, %rax		/* 3 */
	mov	%rsi, %rdx		/* 3 */
	fstpl	0(%rdx)			/* in[2] */
	fstpl	8(%rdx)			/* in[1] */
	fstpl	16(%rdx)		/* in[0] */
	ret
END(opt_x87)

/* void opt_x87full(const double *in, double *out): all eight x87 registers
 * live across the probe (as in MMX code); out[i] = in[7 - i]. */
FUNC(opt_x87full)
	.irp i, 0,1,2,3,4,5,6,7
	fldl	\i*8(%rdi)
	.endr
LABEL(opt_x87full_p)
	mov	%rdi, %rax		/* 3 */
	mov	%rsi, %rdx		/* 3 */
	.irp i, 0,1,2,3,4,5,6,7
	fstpl	\i*8(%rdx)
	.endr
	ret
END(opt_x87full)

/*
 * void opt_gpr(unsigned long *out): every general register gets a known
 * value (opt_gpr_vals[]) and the flags are opt_gpr_flags, then the
 * probed region (two lea: r15 += 1, r14 += 1, flags unchanged), then
 * out[0..14] = rax rbx rcx rdx rsi rdi rbp r8 r9 r10 r11 r12 r13 r14 r15,
 * out[15] = rflags; opt_gpr_sp[0] and [1] = rsp before and after.
 */
FUNC(opt_gpr)
	push	%rbx
	push	%rbp
	push	%r12
	push	%r13
	push	%r14
	push	%r15
	push	%rdi
	mov	%rsp, opt_gpr_sp(%rip)
	pushq	opt_gpr_flags(%rip)	/* CF PF AF ZF SF OF by default */
	popfq
	mov	opt_gpr_vals+0*8(%rip), %rax
	mov	opt_gpr_vals+1*8(%rip), %rbx
	mov	opt_gpr_vals+2*8(%rip), %rcx
	mov	opt_gpr_vals+3*8(%rip), %rdx
	mov	opt_gpr_vals+4*8(%rip), %rsi
	mov	opt_gpr_vals+5*8(%rip), %rdi
	mov	opt_gpr_vals+6*8(%rip), %rbp
	mov	opt_gpr_vals+7*8(%rip), %r8
	mov	opt_gpr_vals+8*8(%rip), %r9
	mov	opt_gpr_vals+9*8(%rip), %r10
	mov	opt_gpr_vals+10*8(%rip), %r11
	mov	opt_gpr_vals+11*8(%rip), %r12
	mov	opt_gpr_vals+12*8(%rip), %r13
	mov	opt_gpr_vals+13*8(%rip), %r14
	mov	opt_gpr_vals+14*8(%rip), %r15
LABEL(opt_gpr_p)
	lea	1(%r15), %r15		/* 4 */
	lea	1(%r14), %r14		/* 4 */
	pushfq
	mov	%rsp, opt_gpr_sp+8(%rip)
	xchg	%rdi, 8(%rsp)		/* rdi = out; the slot keeps rdi */
	mov	%rax, 0*8(%rdi)
	mov	%rbx, 1*8(%rdi)
	mov	%rcx, 2*8(%rdi)
	mov	%rdx, 3*8(%rdi)
	mov	%rsi, 4*8(%rdi)
	mov	%rbp, 6*8(%rdi)
	mov	%r8, 7*8(%rdi)
	mov	%r9, 8*8(%rdi)
	mov	%r10, 9*8(%rdi)
	mov	%r11, 10*8(%rdi)
	mov	%r12, 11*8(%rdi)
	mov	%r13, 12*8(%rdi)
	mov	%r14, 13*8(%rdi)
	mov	%r15, 14*8(%rdi)
	pop	%rax			/* rflags */
	mov	%rax, 15*8(%rdi)
	pop	%rax			/* rdi as it was */
	mov	%rax, 5*8(%rdi)
	pop	%r15
	pop	%r14
	pop	%r13
	pop	%r12
	pop	%rbp
	pop	%rbx
	ret
END(opt_gpr)

/* unsigned long opt_df(long x): the probe runs with DF set; returns the
 * rflags after the region (DF cleared again before returning). */
FUNC(opt_df)
	std
LABEL(opt_df_p)
	lea	1(%rdi), %rax		/* 4 */
	lea	1(%rax), %rax		/* 4 */
	pushfq
	pop	%rax
	cld
	ret
END(opt_df)

/*
 * long opt_redzone(long seed): a leaf that keeps 16 values at -8(%rsp) ..
 * -128(%rsp) across the probe; returns 0 if all are intact, else 1 + the
 * index of the first that changed.
 */
FUNC(opt_redzone)
	.irp i, 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16
	lea	\i*0x1111(%rdi), %rax
	mov	%rax, -\i*8(%rsp)
	.endr
LABEL(opt_redzone_p)
	mov	%rdi, %rax		/* 3 */
	mov	%rdi, %rdx		/* 3 */
	.irp i, 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16
	lea	\i*0x1111(%rdi), %rax
	cmp	%rax, -\i*8(%rsp)
	jne	8f
	.endr
	xor	%eax, %eax
	ret
8:	/* find which */
	mov	$1, %ecx
9:	mov	%rcx, %rax
	imul	$0x1111, %rax, %rax
	add	%rdi, %rax
	mov	%rcx, %rdx
	neg	%rdx
	cmp	%rax, (%rsp,%rdx,8)
	jne	7f
	inc	%rcx
	cmp	$16, %rcx
	jbe	9b
7:	mov	%rcx, %rax
	ret
END(opt_redzone)

/* long opt_align(long x): x + 3, with probes where %rsp is 8 (entry),
 * 0 (after a push) and 4 (after sub $4) mod 16. */
FUNC(opt_align)
LABEL(opt_align_p0)
	mov	%rdi, %rax		/* 3 */
	add	$1, %rax		/* 4 */
	push	%rbx
LABEL(opt_align_p1)
	mov	%rax, %rbx		/* 3 */
	add	$1, %rbx		/* 4 */
	sub	$4, %rsp
LABEL(opt_align_p2)
	mov	%rbx, %rax		/* 3 */
	add	$1, %rax		/* 4 */
	add	$4, %rsp
	pop	%rbx
	ret
END(opt_align)

/* ---------------------------------------------------------------------- */
/* Faults                                                                  */
/* ---------------------------------------------------------------------- */

/* long opt_fault(long *p): *p; the load is the region's 2nd instruction. */
FUNC(opt_fault)
LABEL(opt_fault_p)
	mov	%rdi, %rax		/* 3 */
LABEL(opt_fault_ld)
	mov	(%rax), %rax		/* 3 */
	ret
END(opt_fault)

/* long opt_fault1(long *p): *p + 1; the load is the region's 1st. */
FUNC(opt_fault1)
LABEL(opt_fault1_p)
	mov	(%rdi), %rax		/* 3 */
	add	$1, %rax		/* 4 */
	ret
END(opt_fault1)

/* long opt_sigin(long x, long *p): x + *p; the load is the region's 2nd
 * instruction, inside the bytes a jmp at the probe replaces. */
FUNC(opt_sigin)
LABEL(opt_sigin_p)
	mov	%rdi, %rax		/* 3 */
LABEL(opt_sigin_ld)
	mov	(%rsi), %rdx		/* 3 */
	add	%rdx, %rax
	ret
END(opt_sigin)

/* ---------------------------------------------------------------------- */
/* Return probes and patchable entries                                     */
/* ---------------------------------------------------------------------- */

/* long opt_kret(long x): x + 3. */
FUNC(opt_kret)
	mov	%rdi, %rax		/* 3 */
	add	$3, %rax		/* 4 */
	ret
END(opt_kret)

/* void opt_kret_vec(double *out, double a0, ..., double a7): out[i] = ai,
 * stored after the entry region (the arguments are live in xmm0-7). */
FUNC(opt_kret_vec)
	mov	%rdi, %rax		/* 3 */
	add	$0, %rax		/* 4 */
	.irp r, 0,1,2,3,4,5,6,7
	movsd	%xmm\r, \r*8(%rdi)
	.endr
	ret
END(opt_kret_vec)

/* long opt_fentry(long x): x * 3 + 1, starting with the 5-byte nop that
 * -mfentry -mnop-mcount (and the kernel's ftrace) put at function entry. */
FUNC(opt_fentry)
	.byte	0x0f, 0x1f, 0x44, 0x00, 0x00	/* nopl 0x0(%rax,%rax,1) */
LABEL(opt_fentry_body)
	lea	1(%rdi,%rdi,2), %rax
	ret
END(opt_fentry)

	.data
	.p2align 3
	.globl	opt_rip_data, opt_rip_store, opt_gpr_vals, opt_gpr_sp, opt_gpr_flags
opt_rip_data:
	.quad	0x1122334455667788
opt_rip_store:
	.quad	0
opt_gpr_vals:
	.quad	0x1010101010101010, 0x2020202020202b2b, 0x3030303030303c3c
	.quad	0x4040404040404d4d, 0x5050505050505e5e, 0x6060606060606f6f
	.quad	0x7070707070707171, 0x8080808080808282, 0x9090909090909393
	.quad	0xa0a0a0a0a0a0a4a4, 0xb0b0b0b0b0b0b5b5, 0xc0c0c0c0c0c0c6c6
	.quad	0xd0d0d0d0d0d0d7d7, 0xe0e0e0e0e0e0e8e8, 0xf0f0f0f0f0f0f9f9
opt_gpr_sp:
	.quad	0, 0
opt_gpr_flags:
	.quad	0x8d7			/* CF PF AF ZF SF OF and bit 1 */

	.section .note.GNU-stack, "", @progbits
