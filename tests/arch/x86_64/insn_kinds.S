/* SPDX-License-Identifier: MIT */
/*
 * insn_kinds.S - one function per kind of instruction that a probe must
 * execute out of line (or emulate) correctly.  Each function takes one
 * argument in %rdi and returns a value in %rax that depends on the probed
 * instruction having done exactly its job.  Labels:
 *   scn_ik_NAME_at      the probed instruction
 *   scn_ik_NAME_next    the instruction after it
 *   scn_ik_NAME_target  the branch target, for branches
 * Branches jump to local labels ("2f") so that gas picks the short form where
 * it can (a jump to a global symbol is always emitted as rel32).
 */
#include "scn_asm.h"

	.text

/* ---- mov x(%rip),%rax ---------------------------------------------------- */
FUNC(scn_ik_ripload)
	mov	%rdi, %rcx
LABEL(scn_ik_ripload_at)
	mov	scn_ik_data(%rip), %rax
LABEL(scn_ik_ripload_next)
	add	%rcx, %rax
	ret
END(scn_ik_ripload)

/* ---- mov %rax,x(%rip) ---------------------------------------------------- */
FUNC(scn_ik_ripstore)
	lea	1(%rdi), %rax
LABEL(scn_ik_ripstore_at)
	mov	%rax, scn_ik_store(%rip)
LABEL(scn_ik_ripstore_next)
	xor	%eax, %eax
	mov	scn_ik_store(%rip), %rax
	add	%rax, %rax
	ret
END(scn_ik_ripstore)

/* ---- lea x(%rip),%rax ---------------------------------------------------- */
FUNC(scn_ik_lea)
	mov	%rdi, %rcx
LABEL(scn_ik_lea_at)
	lea	scn_ik_data(%rip), %rax
LABEL(scn_ik_lea_next)
	add	%rcx, %rax
	ret
END(scn_ik_lea)

/* ---- call rel32 to a local function --------------------------------------- */
/* Local helper: returns rdi + 7 in %rax and its return address in %rdx. */
	.p2align 4
	.type	scn_ik_lhelper, @function
scn_ik_lhelper:
LABEL(scn_ik_call_target)
	lea	7(%rdi), %rax
	mov	(%rsp), %rdx
	ret
	.size	scn_ik_lhelper, . - scn_ik_lhelper

FUNC(scn_ik_call)
	push	%rbx
	mov	%rdi, %rbx
LABEL(scn_ik_call_at)
	call	scn_ik_lhelper
LABEL(scn_ik_call_next)
	lea	scn_ik_call_next(%rip), %rcx
	cmp	%rcx, %rdx		/* pushed return address is the original */
	jne	1f
	add	%rbx, %rax
	pop	%rbx
	ret
1:	mov	$-1, %rax
	pop	%rbx
	ret
END(scn_ik_call)

/* ---- ret ----------------------------------------------------------------- */
FUNC(scn_ik_ret)
	lea	3(%rdi), %rax
LABEL(scn_ik_ret_at)
	ret
LABEL(scn_ik_ret_next)
	ud2
END(scn_ik_ret)

/* ---- jcc rel8: rdi == 0 ? 100 : 200 --------------------------------------- */
FUNC(scn_ik_jcc8)
	test	%rdi, %rdi
LABEL(scn_ik_jcc8_at)
	jz	2f
LABEL(scn_ik_jcc8_next)
	mov	$200, %eax
	ret
LABEL(scn_ik_jcc8_target)
2:	mov	$100, %eax
	ret
END(scn_ik_jcc8)

/* ---- jcc rel32: rdi == 0 ? 300 : 400 -------------------------------------- */
FUNC(scn_ik_jcc32)
	test	%rdi, %rdi
LABEL(scn_ik_jcc32_at)
	jz	2f
LABEL(scn_ik_jcc32_next)
	mov	$400, %eax
	ret
	.fill	200, 1, 0x90		/* too far for rel8 */
LABEL(scn_ik_jcc32_target)
2:	mov	$300, %eax
	ret
END(scn_ik_jcc32)

/* ---- jmp rel8: rdi + 5 ---------------------------------------------------- */
FUNC(scn_ik_jmp8)
	mov	%rdi, %rax
LABEL(scn_ik_jmp8_at)
	jmp	2f
LABEL(scn_ik_jmp8_next)
	mov	$-1, %rax
	ret
LABEL(scn_ik_jmp8_target)
2:	add	$5, %rax
	ret
END(scn_ik_jmp8)

/* ---- jmp rel32: rdi + 6 --------------------------------------------------- */
FUNC(scn_ik_jmp32)
	mov	%rdi, %rax
LABEL(scn_ik_jmp32_at)
	jmp	2f
LABEL(scn_ik_jmp32_next)
	mov	$-1, %rax
	ret
	.fill	200, 1, 0x90
LABEL(scn_ik_jmp32_target)
2:	add	$6, %rax
	ret
END(scn_ik_jmp32)

/* ---- loop: sum of 1..rdi (rdi >= 1) --------------------------------------- */
FUNC(scn_ik_loop)
	xor	%eax, %eax
	mov	%rdi, %rcx
LABEL(scn_ik_loop_target)
2:	add	%rcx, %rax
LABEL(scn_ik_loop_at)
	loop	2b
LABEL(scn_ik_loop_next)
	shl	$8, %rax
	or	%rcx, %rax		/* rcx must be 0 */
	ret
END(scn_ik_loop)

/* ---- jrcxz: rdi == 0 ? 11 : 22 -------------------------------------------- */
FUNC(scn_ik_jrcxz)
	mov	%rdi, %rcx
LABEL(scn_ik_jrcxz_at)
	jrcxz	2f
LABEL(scn_ik_jrcxz_next)
	mov	$22, %eax
	ret
LABEL(scn_ik_jrcxz_target)
2:	mov	$11, %eax
	ret
END(scn_ik_jrcxz)

/* ---- push / pop ----------------------------------------------------------- */
FUNC(scn_ik_pushpop)
	lea	9(%rdi), %rdx
LABEL(scn_ik_push_at)
	push	%rdx
LABEL(scn_ik_push_next)
LABEL(scn_ik_pop_at)
	pop	%rax
LABEL(scn_ik_pop_next)
	add	%rdi, %rax
	ret
END(scn_ik_pushpop)

/* ---- push x(%rip) --------------------------------------------------------- */
FUNC(scn_ik_pushmem)
LABEL(scn_ik_pushmem_at)
	pushq	scn_ik_data(%rip)
LABEL(scn_ik_pushmem_next)
	pop	%rax
	add	%rdi, %rax
	ret
END(scn_ik_pushmem)

/* ---- pushfq: flags of cmp $5,%rdi (TF included in the mask) --------------- */
FUNC(scn_ik_pushf)
	cmp	$5, %rdi
LABEL(scn_ik_pushf_at)
	pushfq
LABEL(scn_ik_pushf_next)
	pop	%rax
	and	$0xdd5, %rax		/* CF PF AF ZF SF TF DF OF */
	ret
END(scn_ik_pushf)

/* ---- popfq: rdi becomes the flags; read them back ------------------------- */
FUNC(scn_ik_popf)
	pushfq				/* saved, restored at the end */
	push	%rdi
LABEL(scn_ik_popf_at)
	popfq
LABEL(scn_ik_popf_next)
	setc	%al			/* setcc and pushfq leave the flags */
	setz	%cl
	sets	%dl
	seto	%sil
	pushfq
	pop	%r8
	movzbl	%al, %eax
	movzbl	%cl, %ecx
	movzbl	%dl, %edx
	movzbl	%sil, %esi
	shl	$1, %ecx
	shl	$2, %edx
	shl	$3, %esi
	or	%ecx, %eax
	or	%edx, %eax
	or	%esi, %eax
	and	$0xdd5, %r8		/* CF PF AF ZF SF TF DF OF */
	shl	$8, %r8
	or	%r8, %rax
	popfq
	ret
END(scn_ik_popf)

/* ---- movdqu x(%rip),%xmm0 ------------------------------------------------- */
FUNC(scn_ik_sse)
	pxor	%xmm0, %xmm0
LABEL(scn_ik_sse_at)
	movdqu	scn_ik_xdata(%rip), %xmm0
LABEL(scn_ik_sse_next)
	movq	%xmm0, %rax
	pextrq	$1, %xmm0, %rdx
	xor	%rdx, %rax
	add	%rdi, %rax
	ret
END(scn_ik_sse)

/* ---- vpaddd %ymm1,%ymm2,%ymm0 (AVX2) -------------------------------------- */
FUNC(scn_ik_avx)
	vmovdqu	scn_ik_ydata(%rip), %ymm1
	vmovd	%edi, %xmm2
	vpbroadcastd %xmm2, %ymm2
	vpxor	%ymm0, %ymm0, %ymm0
LABEL(scn_ik_avx_at)
	vpaddd	%ymm1, %ymm2, %ymm0
LABEL(scn_ik_avx_next)
	/* fold the 8 dwords: sum_i (rdi + y[i]) * (i + 1) */
	vmovdqu	%ymm0, -40(%rsp)	/* red zone */
	xor	%eax, %eax
	xor	%ecx, %ecx
1:	movl	-40(%rsp,%rcx,4), %edx
	lea	1(%rcx), %r8
	imul	%r8, %rdx
	add	%rdx, %rax
	inc	%ecx
	cmp	$8, %ecx
	jne	1b
	vzeroupper
	ret
END(scn_ik_avx)

/* ---- syscall: getpid; %rcx must be the next instruction ------------------- */
FUNC(scn_ik_syscall)
	mov	$39, %eax
	xor	%ecx, %ecx
LABEL(scn_ik_syscall_at)
	syscall
LABEL(scn_ik_syscall_next)
	lea	scn_ik_syscall_next(%rip), %rdx
	cmp	%rdx, %rcx
	jne	1f
	ret
1:	mov	$-1, %rax
	ret
END(scn_ik_syscall)

/* ---- global helper for indirect calls: rdi + 7, return address in %rdx --- */
FUNC(scn_ik_helper)
	lea	7(%rdi), %rax
	mov	(%rsp), %rdx
	ret
END(scn_ik_helper)

/* ---- call *%r11 ----------------------------------------------------------- */
FUNC(scn_ik_callreg)
	push	%rbx
	mov	%rdi, %rbx
	lea	scn_ik_helper(%rip), %r11
LABEL(scn_ik_callreg_at)
	call	*%r11
LABEL(scn_ik_callreg_next)
	lea	scn_ik_callreg_next(%rip), %rcx
	cmp	%rcx, %rdx
	jne	1f
	add	%rbx, %rax
	pop	%rbx
	ret
1:	mov	$-1, %rax
	pop	%rbx
	ret
END(scn_ik_callreg)

/* ---- call *x(%rip) -------------------------------------------------------- */
FUNC(scn_ik_callmem)
	push	%rbx
	mov	%rdi, %rbx
LABEL(scn_ik_callmem_at)
	call	*scn_ik_fptr(%rip)
LABEL(scn_ik_callmem_next)
	lea	scn_ik_callmem_next(%rip), %rcx
	cmp	%rcx, %rdx
	jne	1f
	add	%rbx, %rax
	pop	%rbx
	ret
1:	mov	$-1, %rax
	pop	%rbx
	ret
END(scn_ik_callmem)

/* ---- jmp *%rax through a PIC jump table: case rdi & 3 --------------------- */
FUNC(scn_ik_jtab)
	mov	%edi, %eax
	and	$3, %eax
	lea	scn_ik_jtab_table(%rip), %rdx
	movslq	(%rdx,%rax,4), %rax
	add	%rdx, %rax
LABEL(scn_ik_jtab_at)
	jmp	*%rax
LABEL(scn_ik_jtab_next)
	ud2
LABEL(scn_ik_jtab_c0)
	mov	$1000, %eax
	ret
LABEL(scn_ik_jtab_c1)
	mov	$1001, %eax
	ret
LABEL(scn_ik_jtab_c2)
	mov	$1002, %eax
	ret
LABEL(scn_ik_jtab_c3)
	mov	$1003, %eax
	ret
END(scn_ik_jtab)

/* ---- jmp *x(%rip) --------------------------------------------------------- */
FUNC(scn_ik_jmpmem)
	mov	%rdi, %rax
LABEL(scn_ik_jmpmem_at)
	jmp	*scn_ik_jptr(%rip)
LABEL(scn_ik_jmpmem_next)
	ud2
LABEL(scn_ik_jmpmem_target)
	add	$77, %rax
	ret
END(scn_ik_jmpmem)

/* ---- cmovl: rdi < 10 ? 2 : 1 ---------------------------------------------- */
FUNC(scn_ik_cmov)
	mov	$1, %eax
	mov	$2, %ecx
	cmp	$10, %rdi
LABEL(scn_ik_cmov_at)
	cmovl	%rcx, %rax
LABEL(scn_ik_cmov_next)
	ret
END(scn_ik_cmov)

/* ---- rep movsb: copy rdi bytes of src to dst ------------------------------ */
FUNC(scn_ik_repmovs)
	mov	%rdi, %rcx
	lea	scn_ik_src(%rip), %rsi
	lea	scn_ik_dst(%rip), %rdi
LABEL(scn_ik_repmovs_at)
	rep movsb
LABEL(scn_ik_repmovs_next)
	lea	scn_ik_dst(%rip), %rdx
	sub	%rdx, %rdi		/* bytes advanced */
	mov	%rdi, %rax
	shl	$16, %rcx		/* must be 0 */
	or	%rcx, %rax
	ret
END(scn_ik_repmovs)

/* ---- mov 8(%rsp),%rax ----------------------------------------------------- */
FUNC(scn_ik_rspload)
	sub	$24, %rsp
	mov	%rdi, 8(%rsp)
	movq	$0, 16(%rsp)
LABEL(scn_ik_rspload_at)
	mov	8(%rsp), %rax
LABEL(scn_ik_rspload_next)
	add	$24, %rsp
	add	$1, %rax
	ret
END(scn_ik_rspload)

/* ---- addq $3,8(%rsp) ------------------------------------------------------ */
FUNC(scn_ik_rspstore)
	sub	$24, %rsp
	mov	%rdi, 8(%rsp)
LABEL(scn_ik_rspstore_at)
	addq	$3, 8(%rsp)
LABEL(scn_ik_rspstore_next)
	mov	8(%rsp), %rax
	add	$24, %rsp
	ret
END(scn_ik_rspstore)

/* ---- the red zone: 128 bytes below %rsp survive the probe ----------------- */
FUNC(scn_ik_redzone)
	mov	%rdi, %rax
	mov	$-128, %rcx
1:	mov	%rax, (%rsp,%rcx)	/* fill -128..-8 with rdi, rdi+1, ... */
	inc	%rax
	add	$8, %rcx
	jnz	1b
LABEL(scn_ik_redzone_at)
	mov	-8(%rsp), %rdx
LABEL(scn_ik_redzone_next)
	xor	%eax, %eax
	mov	$-128, %rcx
1:	add	(%rsp,%rcx), %rax	/* sum them; rdi*16 + 120 when intact */
	add	$8, %rcx
	jnz	1b
	add	%rdx, %rax
	ret
END(scn_ik_redzone)

/* ---- leave ---------------------------------------------------------------- */
FUNC(scn_ik_leave)
	push	%rbp
	mov	%rsp, %rbp
	sub	$32, %rsp
	mov	%rdi, -8(%rbp)
	mov	-8(%rbp), %rax
	add	$2, %rax
LABEL(scn_ik_leave_at)
	leave
LABEL(scn_ik_leave_next)
	ret
END(scn_ik_leave)


/* ---- movl $imm32,x(%rip): the immediate follows the displacement --------- */
FUNC(scn_ik_ripimm)
	movq	$0, scn_ik_store(%rip)
LABEL(scn_ik_ripimm_at)
	movl	$0x55667788, scn_ik_store(%rip)
LABEL(scn_ik_ripimm_next)
	mov	scn_ik_store(%rip), %rax
	add	%rdi, %rax
	ret
END(scn_ik_ripimm)

/* ---- cmpb $imm8,x(%rip): rdi == 0 ? (data's low byte == 0x88) : - -------- */
FUNC(scn_ik_ripcmp)
	xor	%eax, %eax
LABEL(scn_ik_ripcmp_at)
	cmpb	$0x88, scn_ik_data(%rip)
LABEL(scn_ik_ripcmp_next)
	sete	%al
	add	%rdi, %rax
	ret
END(scn_ik_ripcmp)

/* ---- lock xadd %rax,x(%rip) ---------------------------------------------- */
FUNC(scn_ik_xadd)
	movq	$100, scn_ik_store(%rip)
	mov	%rdi, %rax
LABEL(scn_ik_xadd_at)
	lock xadd %rax, scn_ik_store(%rip)
LABEL(scn_ik_xadd_next)
	shl	$16, %rax			/* old value (100) */
	add	scn_ik_store(%rip), %rax	/* + 100 + rdi */
	ret
END(scn_ik_xadd)

/* ---- vmovdqu x(%rip),%ymm1: VEX with a RIP-relative operand --------------- */
FUNC(scn_ik_vexrip)
	vpxor	%ymm1, %ymm1, %ymm1
LABEL(scn_ik_vexrip_at)
	vmovdqu	scn_ik_ydata(%rip), %ymm1
LABEL(scn_ik_vexrip_next)
	vextracti128 $1, %ymm1, %xmm2
	vpaddd	%xmm2, %xmm1, %xmm1		/* 1+5 2+6 3+7 4+8 */
	vmovq	%xmm1, %rax
	vpextrq	$1, %xmm1, %rdx
	add	%rdx, %rax
	add	%rdi, %rax
	vzeroupper
	ret
END(scn_ik_vexrip)

/* ---- call to the next instruction, then pop: the PIC idiom --------------- */
FUNC(scn_ik_callpop)
LABEL(scn_ik_callpop_at)
	call	1f
LABEL(scn_ik_callpop_next)
LABEL(scn_ik_callpop_target)
1:	pop	%rax
	lea	scn_ik_callpop_next(%rip), %rdx
	sub	%rdx, %rax			/* 0 when the pushed address is right */
	add	%rdi, %rax
	ret
END(scn_ik_callpop)

/* ---- repz ret (f3 c3) and bnd ret (f2 c3) -------------------------------- */
FUNC(scn_ik_repret)
	lea	4(%rdi), %rax
LABEL(scn_ik_repret_at)
	repz ret
LABEL(scn_ik_repret_next)
	ud2
END(scn_ik_repret)

FUNC(scn_ik_bndret)
	lea	5(%rdi), %rax
LABEL(scn_ik_bndret_at)
	.byte	0xf2, 0xc3			/* bnd ret */
LABEL(scn_ik_bndret_next)
	ud2
END(scn_ik_bndret)

/* ---- notrack jmp *%rax (3e ff e0), as gcc -fcf-protection emits for switch */
FUNC(scn_ik_notrack)
	lea	scn_ik_notrack_target(%rip), %rax
	mov	%rdi, %rcx
LABEL(scn_ik_notrack_at)
	notrack jmp *%rax
LABEL(scn_ik_notrack_next)
	ud2
LABEL(scn_ik_notrack_target)
	lea	8(%rcx), %rax
	ret
END(scn_ik_notrack)

/* ---- bnd jmp rel8 (f2 eb) ------------------------------------------------ */
FUNC(scn_ik_bndjmp)
	mov	%rdi, %rax
LABEL(scn_ik_bndjmp_at)
	bnd jmp	2f
LABEL(scn_ik_bndjmp_next)
	mov	$-1, %rax
	ret
LABEL(scn_ik_bndjmp_target)
2:	add	$9, %rax
	ret
END(scn_ik_bndjmp)

/* ---- xchg %rax,(%rsp) ---------------------------------------------------- */
FUNC(scn_ik_xchgsp)
	push	%rdi
	mov	$3, %eax
LABEL(scn_ik_xchgsp_at)
	xchg	%rax, (%rsp)
LABEL(scn_ik_xchgsp_next)
	pop	%rcx				/* 3 */
	shl	$8, %rax			/* rdi << 8 */
	add	%rcx, %rax
	ret
END(scn_ik_xchgsp)

/* ------------------------------------------------------------------------- */
	.data
	.p2align 5
LABEL(scn_ik_ydata)
	.long	1, 2, 3, 4, 5, 6, 7, 8
LABEL(scn_ik_xdata)
	.quad	0x0102030405060708, 0x1020304050607080
LABEL(scn_ik_data)
	.quad	0x1122334455667788
LABEL(scn_ik_store)
	.quad	0
LABEL(scn_ik_fptr)
	.quad	scn_ik_helper
LABEL(scn_ik_jptr)
	.quad	scn_ik_jmpmem_target
LABEL(scn_ik_src)
	.ascii	"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!?"
	.ascii	"ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba9876543210?!"

	.bss
LABEL(scn_ik_dst)
	.zero	128

	.section .rodata
	.p2align 2
scn_ik_jtab_table:
	.long	scn_ik_jtab_c0 - scn_ik_jtab_table
	.long	scn_ik_jtab_c1 - scn_ik_jtab_table
	.long	scn_ik_jtab_c2 - scn_ik_jtab_table
	.long	scn_ik_jtab_c3 - scn_ik_jtab_table

	.section .note.GNU-stack, "", @progbits
