// SPDX-License-Identifier: MIT
/*
 * templates.c - the instruction templates: a mnemonic, the operand kinds
 * each operand may take (templates.h), the CPU feature it needs and how
 * often to draw it.  Integer ALU in every operand form, shifts, bit tests,
 * BMI, cmov/setcc, xchg/xadd/cmpxchg (lock), lea, SSE to SSE4.2, AES,
 * AVX/AVX2/FMA/F16C, AVX-512 with write masks.
 */
#include "templates.h"

#define ALU(x)  { MN(x), "1248", "", { "rm", "rmi" }, F_BASE, T_LOCK, 6 }
#define ALU0(x) { MN(x), "1248", "", { "rm", "rmi" }, F_BASE, 0, 4 }
#define UNARY(x) { MN(x), "1248", "", { "rm" }, F_BASE, T_LOCK, 3 }
#define SHIFT(x) { MN(x), "1248", "", { "rm", "c1k" }, F_BASE, 0, 3 }
#define CMOV(x) { MN(x), "248", "", { "r", "rm" }, F_BASE, 0, 1 }
#define SET(x)  { MN(x), "", "", { "bB" }, F_BASE, 0, 1 }
#define NOOP(x, w) { MN(x), "", "", { NULL }, F_BASE, 0, w }
#define SSE2(x) { MN(x), "", "", { "x", "xX" }, F_BASE, T_LEG, 1 }
#define SSEF(x, f) { MN(x), "", "", { "x", "xX" }, f, T_LEG, 1 }
#define SSEI(x, f) { MN(x), "", "", { "x", "xX", "k" }, f, T_LEG, 1 }
#define AVX3(x, w, f) { MN(x), "", w, { "V", "V", "VN" }, f, T_VEX, 1 }
#define AVX2OP(x, w, f) { MN(x), "", w, { "V", "VN" }, f, T_VEX, 1 }
#define E3(x) { MN(x), "", "xyz", { "V", "M", "V", "VN" }, F_AVX512, T_EVEX, 1 }

const struct tmpl fuzz_tmpls[] = {
	/* integer arithmetic and logic, every operand form */
	ALU(ADD), ALU(ADC), ALU(SUB), ALU(SBB), ALU(AND), ALU(OR), ALU(XOR),
	ALU0(CMP), ALU0(MOV),
	{ MN(TEST), "1248", "", { "rm", "ri" }, F_BASE, 0, 3 },
	{ MN(MOV), "8", "", { "r", "I" }, F_BASE, 0, 2 },
	UNARY(INC), UNARY(DEC), UNARY(NEG), UNARY(NOT),
	{ MN(IMUL), "248", "", { "r", "rm" }, F_BASE, 0, 2 },
	{ MN(IMUL), "248", "", { "r", "rm", "i" }, F_BASE, 0, 2 },
	{ MN(IMUL), "1248", "", { "rm" }, F_BASE, 0, 1 },
	{ MN(MUL), "1248", "", { "rm" }, F_BASE, 0, 1 },
	SHIFT(SHL), SHIFT(SHR), SHIFT(SAR), SHIFT(ROL), SHIFT(ROR), SHIFT(RCL), SHIFT(RCR),
	{ MN(SHLD), "248", "", { "rm", "r", "ck" }, F_BASE, 0, 1 },
	{ MN(SHRD), "248", "", { "rm", "r", "ck" }, F_BASE, 0, 1 },
	/* bit tests: a register bit offset only with a register base (with
	 * memory it could reach anywhere) */
	{ MN(BT), "248", "", { "r", "r" }, F_BASE, 0, 1 },
	{ MN(BT), "248", "", { "rm", "k" }, F_BASE, 0, 1 },
	{ MN(BTS), "248", "", { "r", "r" }, F_BASE, 0, 1 },
	{ MN(BTS), "248", "", { "rm", "k" }, F_BASE, T_LOCK, 1 },
	{ MN(BTR), "248", "", { "rm", "k" }, F_BASE, T_LOCK, 1 },
	{ MN(BTC), "248", "", { "rm", "k" }, F_BASE, T_LOCK, 1 },
	{ MN(BTC), "248", "", { "r", "r" }, F_BASE, 0, 1 },
	{ MN(BSF), "248", "", { "r", "rm" }, F_BASE, 0, 1 },
	{ MN(BSR), "248", "", { "r", "rm" }, F_BASE, 0, 1 },
	{ MN(LZCNT), "248", "", { "r", "rm" }, F_LZCNT, 0, 1 },
	{ MN(TZCNT), "248", "", { "r", "rm" }, F_BMI1, 0, 1 },
	{ MN(POPCNT), "248", "", { "r", "rm" }, F_POPCNT, 0, 1 },
	{ MN(BSWAP), "48", "", { "r" }, F_BASE, 0, 1 },
	{ MN(MOVZX), "248", "", { "r", "bB" }, F_BASE, 0, 2 },
	{ MN(MOVZX), "48", "", { "r", "wW" }, F_BASE, 0, 1 },
	{ MN(MOVSX), "248", "", { "r", "bB" }, F_BASE, 0, 1 },
	{ MN(MOVSX), "48", "", { "r", "wW" }, F_BASE, 0, 1 },
	{ MN(MOVSXD), "8", "", { "r", "dD" }, F_BASE, 0, 1 },
	CMOV(CMOVO), CMOV(CMOVNO), CMOV(CMOVB), CMOV(CMOVNB), CMOV(CMOVZ), CMOV(CMOVNZ),
	CMOV(CMOVBE), CMOV(CMOVNBE), CMOV(CMOVS), CMOV(CMOVNS), CMOV(CMOVP), CMOV(CMOVNP),
	CMOV(CMOVL), CMOV(CMOVNL), CMOV(CMOVLE), CMOV(CMOVNLE),
	SET(SETO), SET(SETNO), SET(SETB), SET(SETNB), SET(SETZ), SET(SETNZ), SET(SETBE),
	SET(SETNBE), SET(SETS), SET(SETNS), SET(SETP), SET(SETNP), SET(SETL), SET(SETNL),
	SET(SETLE), SET(SETNLE),
	{ MN(XCHG), "1248", "", { "rm", "r" }, F_BASE, 0, 2 },
	{ MN(XADD), "1248", "", { "rm", "r" }, F_BASE, T_LOCK, 2 },
	{ MN(CMPXCHG), "1248", "", { "rm", "r" }, F_BASE, T_LOCK, 2 },
	NOOP(CBW, 1), NOOP(CWDE, 1), NOOP(CDQE, 1), NOOP(CWD, 1), NOOP(CDQ, 1), NOOP(CQO, 1),
	NOOP(LAHF, 1), NOOP(SAHF, 1), NOOP(CLC, 1), NOOP(STC, 1), NOOP(CMC, 1),
	NOOP(CLD, 1), NOOP(STD, 1), NOOP(NOP, 1), NOOP(PAUSE, 1), NOOP(LFENCE, 1),
	NOOP(MFENCE, 1), NOOP(SFENCE, 1),
	{ MN(NOP), "24", "", { "m" }, F_BASE, 0, 1 },
	{ MN(PREFETCHT0), "", "", { "B" }, F_BASE, 0, 1 },
	{ MN(PREFETCHNTA), "", "", { "B" }, F_BASE, 0, 1 },
	{ MN(CLFLUSH), "", "", { "B" }, F_BASE, 0, 1 },
	{ MN(MOVNTI), "48", "", { "m", "r" }, F_BASE, 0, 1 },
	{ MN(LEA), "248", "", { "r", "L" }, F_BASE, 0, 6 },
	{ MN(MOVBE), "248", "", { "r", "m" }, F_MOVBE, 0, 1 },
	{ MN(MOVBE), "248", "", { "m", "r" }, F_MOVBE, 0, 1 },
	{ MN(ANDN), "48", "", { "r", "r", "rm" }, F_BMI1, 0, 1 },
	{ MN(BEXTR), "48", "", { "r", "rm", "r" }, F_BMI1, 0, 1 },
	{ MN(BLSI), "48", "", { "r", "rm" }, F_BMI1, 0, 1 },
	{ MN(BLSR), "48", "", { "r", "rm" }, F_BMI1, 0, 1 },
	{ MN(BLSMSK), "48", "", { "r", "rm" }, F_BMI1, 0, 1 },
	{ MN(BZHI), "48", "", { "r", "rm", "r" }, F_BMI2, 0, 1 },
	{ MN(PDEP), "48", "", { "r", "r", "rm" }, F_BMI2, 0, 1 },
	{ MN(PEXT), "48", "", { "r", "r", "rm" }, F_BMI2, 0, 1 },
	{ MN(MULX), "48", "", { "r", "r", "rm" }, F_BMI2, 0, 1 },
	{ MN(RORX), "48", "", { "r", "rm", "k" }, F_BMI2, 0, 1 },
	{ MN(SHLX), "48", "", { "r", "rm", "r" }, F_BMI2, 0, 1 },
	{ MN(SARX), "48", "", { "r", "rm", "r" }, F_BMI2, 0, 1 },
	{ MN(ADCX), "48", "", { "r", "rm" }, F_ADX, 0, 1 },
	{ MN(ADOX), "48", "", { "r", "rm" }, F_ADX, 0, 1 },
	{ MN(CRC32), "", "", { "d", "bBwWdD" }, F_SSE42, 0, 1 },
	{ MN(CRC32), "", "", { "q", "bBqQ" }, F_SSE42, 0, 1 },

	/* SSE */
	{ MN(MOVAPS), "", "", { "x", "xX" }, F_BASE, T_LEG, 2 },
	{ MN(MOVAPS), "", "", { "X", "x" }, F_BASE, T_LEG, 2 },
	{ MN(MOVUPD), "", "", { "x", "xX" }, F_BASE, T_LEG, 1 },
	{ MN(MOVDQA), "", "", { "X", "x" }, F_BASE, T_LEG, 1 },
	{ MN(MOVDQU), "", "", { "x", "xX" }, F_BASE, T_LEG, 2 },
	{ MN(MOVDQU), "", "", { "X", "x" }, F_BASE, T_LEG, 2 },
	{ MN(MOVSS), "", "", { "x", "xD" }, F_BASE, T_LEG, 1 },
	{ MN(MOVSD), "", "", { "D", "x" }, F_BASE, T_LEG, 0 },
	{ MN(MOVSD), "", "", { "x", "xQ" }, F_BASE, T_LEG, 1 },
	{ MN(MOVSD), "", "", { "Q", "x" }, F_BASE, T_LEG, 1 },
	{ MN(MOVQ), "", "", { "x", "xqQ" }, F_BASE, T_LEG, 2 },
	{ MN(MOVQ), "", "", { "qQ", "x" }, F_BASE, T_LEG, 2 },
	{ MN(MOVD), "", "", { "x", "dD" }, F_BASE, T_LEG, 1 },
	{ MN(MOVD), "", "", { "dD", "x" }, F_BASE, T_LEG, 1 },
	{ MN(MOVHPS), "", "", { "x", "Q" }, F_BASE, T_LEG, 1 },
	{ MN(MOVLPD), "", "", { "Q", "x" }, F_BASE, T_LEG, 1 },
	{ MN(MOVHLPS), "", "", { "x", "x" }, F_BASE, T_LEG, 1 },
	SSE2(ADDPS), SSE2(ADDPD), SSE2(SUBPS), SSE2(MULPD), SSE2(DIVPS), SSE2(MINPS), SSE2(MAXPD),
	SSE2(SQRTPS), SSE2(ANDPS), SSE2(ANDNPD), SSE2(ORPS), SSE2(XORPS), SSE2(UNPCKLPS),
	SSE2(UNPCKHPD), SSE2(RCPPS), SSE2(CVTDQ2PS), SSE2(CVTPS2DQ), SSE2(CVTTPS2DQ),
	SSE2(CVTPD2PS), SSE2(PADDB), SSE2(PADDW), SSE2(PADDD), SSE2(PADDQ), SSE2(PSUBB),
	SSE2(PSUBQ), SSE2(PMULLW), SSE2(PMULUDQ), SSE2(PMADDWD), SSE2(PAND), SSE2(PANDN),
	SSE2(POR), SSE2(PXOR), SSE2(PCMPEQB), SSE2(PCMPEQD), SSE2(PCMPGTB), SSE2(PCMPGTD),
	SSE2(PUNPCKLBW), SSE2(PUNPCKHQDQ), SSE2(PACKSSWB), SSE2(PACKUSWB), SSE2(PAVGB),
	SSE2(PMINUB), SSE2(PMAXSW), SSE2(PSADBW), SSE2(HADDPS), SSE2(MOVSHDUP),
	{ MN(ADDSS), "", "", { "x", "xD" }, F_BASE, T_LEG, 1 },
	{ MN(MULSD), "", "", { "x", "xQ" }, F_BASE, T_LEG, 1 },
	{ MN(SQRTSD), "", "", { "x", "xQ" }, F_BASE, T_LEG, 1 },
	{ MN(COMISD), "", "", { "x", "xQ" }, F_BASE, T_LEG, 1 },
	{ MN(UCOMISS), "", "", { "x", "xD" }, F_BASE, T_LEG, 1 },
	{ MN(CVTSI2SD), "", "", { "x", "dDqQ" }, F_BASE, T_LEG, 1 },
	{ MN(CVTSI2SS), "", "", { "x", "dDqQ" }, F_BASE, T_LEG, 1 },
	{ MN(CVTTSD2SI), "", "", { "dq", "xQ" }, F_BASE, T_LEG, 1 },
	{ MN(CVTSS2SI), "", "", { "dq", "xD" }, F_BASE, T_LEG, 1 },
	{ MN(CVTSS2SD), "", "", { "x", "xD" }, F_BASE, T_LEG, 1 },
	{ MN(CMPPS), "", "", { "x", "xX", "k" }, F_BASE, T_LEG, 1 },
	{ MN(SHUFPS), "", "", { "x", "xX", "k" }, F_BASE, T_LEG, 1 },
	{ MN(SHUFPD), "", "", { "x", "xX", "k" }, F_BASE, T_LEG, 1 },
	{ MN(PSHUFD), "", "", { "x", "xX", "k" }, F_BASE, T_LEG, 1 },
	{ MN(PSHUFHW), "", "", { "x", "xX", "k" }, F_BASE, T_LEG, 1 },
	{ MN(PSLLW), "", "", { "x", "xXk" }, F_BASE, T_LEG, 1 },
	{ MN(PSLLQ), "", "", { "x", "xXk" }, F_BASE, T_LEG, 1 },
	{ MN(PSRLD), "", "", { "x", "xXk" }, F_BASE, T_LEG, 1 },
	{ MN(PSRAW), "", "", { "x", "xXk" }, F_BASE, T_LEG, 1 },
	{ MN(PSLLDQ), "", "", { "x", "k" }, F_BASE, T_LEG, 1 },
	{ MN(PSRLDQ), "", "", { "x", "k" }, F_BASE, T_LEG, 1 },
	{ MN(PMOVMSKB), "", "", { "d", "x" }, F_BASE, T_LEG, 1 },
	{ MN(MOVMSKPS), "", "", { "d", "x" }, F_BASE, T_LEG, 1 },
	{ MN(PINSRW), "", "", { "x", "dW", "k" }, F_BASE, T_LEG, 1 },
	{ MN(PEXTRW), "", "", { "d", "x", "k" }, F_BASE, T_LEG, 1 },
	{ MN(MOVNTDQ), "", "", { "X", "x" }, F_BASE, T_LEG, 1 },
	{ MN(LDDQU), "", "", { "x", "X" }, F_BASE, T_LEG, 1 },
	SSEF(PSHUFB, F_SSSE3), SSEF(PABSD, F_SSSE3), SSEF(PHADDW, F_SSSE3),
	SSEF(PMULHRSW, F_SSSE3), SSEF(PSIGNB, F_SSSE3),
	SSEI(PALIGNR, F_SSSE3),
	{ MN(PINSRB), "", "", { "x", "dB", "k" }, F_SSE41, T_LEG, 1 },
	{ MN(PINSRD), "", "", { "x", "dD", "k" }, F_SSE41, T_LEG, 1 },
	{ MN(PINSRQ), "", "", { "x", "qQ", "k" }, F_SSE41, T_LEG, 1 },
	{ MN(PEXTRB), "", "", { "dB", "x", "k" }, F_SSE41, T_LEG, 1 },
	{ MN(PEXTRD), "", "", { "dD", "x", "k" }, F_SSE41, T_LEG, 1 },
	{ MN(PEXTRQ), "", "", { "qQ", "x", "k" }, F_SSE41, T_LEG, 1 },
	{ MN(EXTRACTPS), "", "", { "dD", "x", "k" }, F_SSE41, T_LEG, 1 },
	{ MN(INSERTPS), "", "", { "x", "xD", "k" }, F_SSE41, T_LEG, 1 },
	{ MN(PMOVZXBW), "", "", { "x", "xQ" }, F_SSE41, T_LEG, 1 },
	{ MN(PMOVSXDQ), "", "", { "x", "xQ" }, F_SSE41, T_LEG, 1 },
	SSEF(PTEST, F_SSE41), SSEF(PMINSD, F_SSE41), SSEF(PMAXUD, F_SSE41), SSEF(PMULLD, F_SSE41),
	SSEF(PMULDQ, F_SSE41), SSEF(PCMPEQQ, F_SSE41), SSEF(PACKUSDW, F_SSE41),
	SSEF(BLENDVPS, F_SSE41), SSEF(PBLENDVB, F_SSE41), SSEF(PHMINPOSUW, F_SSE41),
	SSEI(PBLENDW, F_SSE41), SSEI(BLENDPS, F_SSE41), SSEI(ROUNDPS, F_SSE41),
	SSEI(DPPS, F_SSE41), SSEI(MPSADBW, F_SSE41),
	{ MN(ROUNDSD), "", "", { "x", "xQ", "k" }, F_SSE41, T_LEG, 1 },
	SSEF(PCMPGTQ, F_SSE42),
	SSEI(PCMPISTRI, F_SSE42), SSEI(PCMPISTRM, F_SSE42), SSEI(PCMPESTRI, F_SSE42),
	SSEF(AESENC, F_AES), SSEF(AESDECLAST, F_AES), SSEF(AESIMC, F_AES),
	SSEI(AESKEYGENASSIST, F_AES), SSEI(PCLMULQDQ, F_PCLMUL),

	/* AVX, AVX2 (VEX) */
	{ MN(VMOVDQU), "", "xy", { "V", "VN" }, F_AVX, T_VEX, 3 },
	{ MN(VMOVDQU), "", "xy", { "N", "V" }, F_AVX, T_VEX, 3 },
	{ MN(VMOVAPS), "", "xy", { "V", "VN" }, F_AVX, T_VEX, 1 },
	{ MN(VMOVAPD), "", "xy", { "N", "V" }, F_AVX, T_VEX, 1 },
	{ MN(VMOVUPS), "", "xy", { "N", "V" }, F_AVX, T_VEX, 1 },
	{ MN(VMOVNTDQ), "", "xy", { "N", "V" }, F_AVX, T_VEX, 1 },
	{ MN(VLDDQU), "", "xy", { "V", "N" }, F_AVX, T_VEX, 1 },
	AVX3(VADDPS, "xy", F_AVX), AVX3(VSUBPD, "xy", F_AVX), AVX3(VMULPS, "xy", F_AVX),
	AVX3(VDIVPD, "xy", F_AVX), AVX3(VMINPS, "xy", F_AVX), AVX3(VMAXPD, "xy", F_AVX),
	AVX3(VANDPS, "xy", F_AVX), AVX3(VXORPD, "xy", F_AVX), AVX3(VORPS, "xy", F_AVX),
	AVX3(VANDNPS, "xy", F_AVX), AVX3(VUNPCKLPS, "xy", F_AVX), AVX3(VHADDPD, "xy", F_AVX),
	AVX2OP(VSQRTPS, "xy", F_AVX), AVX2OP(VRCPPS, "xy", F_AVX), AVX2OP(VRSQRTPS, "xy", F_AVX),
	AVX2OP(VCVTDQ2PS, "xy", F_AVX), AVX2OP(VPTEST, "xy", F_AVX), AVX2OP(VTESTPS, "xy", F_AVX),
	AVX2OP(VMOVSHDUP, "xy", F_AVX),
	AVX3(VPADDB, "x", F_AVX), AVX3(VPADDD, "x", F_AVX), AVX3(VPXOR, "x", F_AVX),
	AVX3(VPADDB, "y", F_AVX2), AVX3(VPADDW, "y", F_AVX2), AVX3(VPADDD, "y", F_AVX2),
	AVX3(VPADDQ, "y", F_AVX2), AVX3(VPSUBD, "xy", F_AVX2), AVX3(VPMULLD, "xy", F_AVX2),
	AVX3(VPMULUDQ, "xy", F_AVX2), AVX3(VPAND, "xy", F_AVX2), AVX3(VPANDN, "xy", F_AVX2),
	AVX3(VPOR, "xy", F_AVX2), AVX3(VPXOR, "y", F_AVX2), AVX3(VPCMPEQB, "xy", F_AVX2),
	AVX3(VPCMPGTQ, "xy", F_AVX2), AVX3(VPSHUFB, "xy", F_AVX2), AVX3(VPMINUD, "xy", F_AVX2),
	AVX3(VPMAXSB, "xy", F_AVX2), AVX3(VPAVGW, "xy", F_AVX2), AVX3(VPACKSSDW, "xy", F_AVX2),
	AVX3(VPUNPCKLDQ, "xy", F_AVX2), AVX3(VPSADBW, "xy", F_AVX2),
	AVX3(VPMADDUBSW, "xy", F_AVX2), AVX3(VPSLLVD, "xy", F_AVX2), AVX3(VPSRLVQ, "xy", F_AVX2),
	AVX3(VPSRAVD, "xy", F_AVX2),
	{ MN(VPSLLD), "", "xy", { "V", "V", "k" }, F_AVX2, T_VEX, 1 },
	{ MN(VPSRLQ), "", "xy", { "V", "V", "k" }, F_AVX2, T_VEX, 1 },
	{ MN(VPSRAW), "", "xy", { "V", "V", "k" }, F_AVX2, T_VEX, 1 },
	{ MN(VPSHUFD), "", "xy", { "V", "VN", "k" }, F_AVX2, T_VEX, 1 },
	{ MN(VPALIGNR), "", "xy", { "V", "V", "VN", "k" }, F_AVX2, T_VEX, 1 },
	{ MN(VPBLENDD), "", "xy", { "V", "V", "VN", "k" }, F_AVX2, T_VEX, 1 },
	{ MN(VSHUFPS), "", "xy", { "V", "V", "VN", "k" }, F_AVX, T_VEX, 1 },
	{ MN(VCMPPS), "", "xy", { "V", "V", "VN", "k" }, F_AVX, T_VEX, 1 },
	{ MN(VBLENDPS), "", "xy", { "V", "V", "VN", "k" }, F_AVX, T_VEX, 1 },
	{ MN(VDPPS), "", "xy", { "V", "V", "VN", "k" }, F_AVX, T_VEX, 1 },
	{ MN(VROUNDPS), "", "xy", { "V", "VN", "k" }, F_AVX, T_VEX, 1 },
	{ MN(VBLENDVPS), "", "xy", { "V", "V", "VN", "V" }, F_AVX, T_VEX | T_IS4, 1 },
	{ MN(VPBLENDVB), "", "xy", { "V", "V", "VN", "V" }, F_AVX2, T_VEX | T_IS4, 1 },
	{ MN(VPERMQ), "", "y", { "V", "VN", "k" }, F_AVX2, T_VEX, 1 },
	{ MN(VPERMPD), "", "y", { "V", "VN", "k" }, F_AVX2, T_VEX, 1 },
	{ MN(VPERMD), "", "y", { "V", "V", "VN" }, F_AVX2, T_VEX, 1 },
	{ MN(VPERM2I128), "", "y", { "V", "V", "VN", "k" }, F_AVX2, T_VEX, 1 },
	{ MN(VPERM2F128), "", "y", { "V", "V", "VN", "k" }, F_AVX, T_VEX, 1 },
	{ MN(VINSERTI128), "", "y", { "V", "V", "Hh", "k" }, F_AVX2, T_VEX, 1 },
	{ MN(VINSERTF128), "", "y", { "V", "V", "Hh", "k" }, F_AVX, T_VEX, 1 },
	{ MN(VEXTRACTI128), "", "y", { "Hh", "V", "k" }, F_AVX2, T_VEX, 1 },
	{ MN(VEXTRACTF128), "", "y", { "Hh", "V", "k" }, F_AVX, T_VEX, 1 },
	{ MN(VBROADCASTSS), "", "xy", { "V", "D" }, F_AVX, T_VEX, 1 },
	{ MN(VBROADCASTSS), "", "xy", { "V", "x" }, F_AVX2, T_VEX, 1 },
	{ MN(VBROADCASTSD), "", "y", { "V", "xQ" }, F_AVX2, T_VEX, 1 },
	{ MN(VPBROADCASTB), "", "xy", { "V", "xB" }, F_AVX2, T_VEX, 1 },
	{ MN(VPBROADCASTQ), "", "xy", { "V", "xQ" }, F_AVX2, T_VEX, 1 },
	{ MN(VBROADCASTI128), "", "y", { "V", "X" }, F_AVX2, T_VEX, 1 },
	{ MN(VMOVMSKPS), "", "xy", { "d", "V" }, F_AVX, T_VEX, 1 },
	{ MN(VPMOVMSKB), "", "xy", { "d", "V" }, F_AVX2, T_VEX, 1 },
	{ MN(VPEXTRQ), "", "", { "qQ", "x", "k" }, F_AVX, T_VEX, 1 },
	{ MN(VPINSRQ), "", "", { "x", "x", "qQ", "k" }, F_AVX, T_VEX, 1 },
	{ MN(VMOVQ), "", "", { "x", "xqQ" }, F_AVX, T_VEX, 1 },
	{ MN(VMOVD), "", "", { "dD", "x" }, F_AVX, T_VEX, 1 },
	{ MN(VCVTSI2SD), "", "", { "x", "x", "dDqQ" }, F_AVX, T_VEX, 1 },
	{ MN(VCVTTSD2SI), "", "", { "dq", "xQ" }, F_AVX, T_VEX, 1 },
	{ MN(VMOVSS), "", "", { "x", "x", "x" }, F_AVX, T_VEX, 1 },
	{ MN(VMOVSD), "", "", { "Q", "x" }, F_AVX, T_VEX, 1 },
	{ MN(VMOVHPS), "", "", { "x", "x", "Q" }, F_AVX, T_VEX, 1 },
	{ MN(VCVTPH2PS), "", "x", { "V", "xQ" }, F_F16C, T_VEX, 1 },
	{ MN(VCVTPS2PH), "", "", { "xQ", "x", "k" }, F_F16C, T_VEX, 1 },
	AVX3(VFMADD132PS, "xy", F_FMA), AVX3(VFMADD231PD, "xy", F_FMA),
	AVX3(VFNMSUB213PS, "xy", F_FMA), AVX3(VFMSUBADD231PS, "xy", F_FMA),
	{ MN(VFMADD213SD), "", "", { "x", "x", "xQ" }, F_FMA, T_VEX, 1 },
	{ MN(VMASKMOVPS), "", "xy", { "V", "V", "N" }, F_AVX, T_VEX, 1 },
	{ MN(VMASKMOVPS), "", "xy", { "N", "V", "V" }, F_AVX, T_VEX, 1 },
	{ MN(VPMASKMOVD), "", "xy", { "N", "V", "V" }, F_AVX2, T_VEX, 1 },
	{ MN(VZEROUPPER), "", "", { NULL }, F_AVX, T_VEX, 1 },
	{ MN(VZEROALL), "", "", { NULL }, F_AVX, T_VEX, 1 },

	/* AVX-512 (EVEX): registers 0-31, write masks */
	{ MN(VMOVDQU64), "", "xyz", { "V", "M", "VN" }, F_AVX512, T_EVEX, 2 },
	{ MN(VMOVDQU32), "", "xyz", { "N", "M", "V" }, F_AVX512, T_EVEX, 2 },
	{ MN(VMOVDQA64), "", "xyz", { "N", "M", "V" }, F_AVX512, T_EVEX, 1 },
	{ MN(VMOVUPS), "", "xyz", { "V", "M", "VN" }, F_AVX512, T_EVEX, 1 },
	E3(VPADDD), E3(VPADDQ), E3(VPSUBD), E3(VPMULLQ), E3(VPANDD), E3(VPORQ), E3(VPXORD),
	E3(VPMAXSQ), E3(VPMINUQ), E3(VPROLVD), E3(VPSRAVQ), E3(VPERMT2D), E3(VPERMI2Q),
	E3(VPMULLD), E3(VADDPS), E3(VMULPD),
	{ MN(VPTERNLOGD), "", "xyz", { "V", "M", "V", "VN", "k" }, F_AVX512, T_EVEX, 1 },
	{ MN(VPTERNLOGQ), "", "xyz", { "V", "M", "V", "VN", "k" }, F_AVX512, T_EVEX, 1 },
	{ MN(VALIGND), "", "xyz", { "V", "M", "V", "VN", "k" }, F_AVX512, T_EVEX, 1 },
	{ MN(VPROLD), "", "xyz", { "V", "M", "VN", "k" }, F_AVX512, T_EVEX, 1 },
	{ MN(VPSRAQ), "", "xyz", { "V", "M", "VN", "k" }, F_AVX512, T_EVEX, 1 },
	{ MN(VPCMPD), "", "xyz", { "K", "M", "V", "VN", "k" }, F_AVX512, T_EVEX, 1 },
	{ MN(VPCMPUQ), "", "xyz", { "K", "M", "V", "VN", "k" }, F_AVX512, T_EVEX, 1 },
	{ MN(VPCOMPRESSD), "", "xyz", { "VN", "M", "V" }, F_AVX512, T_EVEX, 1 },
	{ MN(VPEXPANDQ), "", "xyz", { "V", "M", "VN" }, F_AVX512, T_EVEX, 1 },
	{ MN(VPERMQ), "", "yz", { "V", "M", "V", "VN" }, F_AVX512, T_EVEX, 1 },
	{ MN(VPBROADCASTD), "", "xyz", { "V", "M", "dD" }, F_AVX512, T_EVEX, 1 },
	{ MN(VEXTRACTI64X4), "", "z", { "Hh", "M", "V", "k" }, F_AVX512, T_EVEX, 1 },
	{ MN(VINSERTI64X4), "", "z", { "V", "M", "V", "Hh", "k" }, F_AVX512, T_EVEX, 1 },
	{ MN(KMOVW), "", "", { "K", "dK" }, F_AVX512, 0, 1 },
	{ MN(KMOVW), "", "", { "d", "K" }, F_AVX512, 0, 1 },
	{ MN(KMOVQ), "", "", { "K", "qQ" }, F_AVX512, 0, 1 },
	{ MN(KMOVQ), "", "", { "Q", "K" }, F_AVX512, 0, 1 },
	{ MN(KANDW), "", "", { "K", "K", "K" }, F_AVX512, 0, 1 },
	{ MN(KXORQ), "", "", { "K", "K", "K" }, F_AVX512, 0, 1 },
	{ MN(KNOTW), "", "", { "K", "K" }, F_AVX512, 0, 1 },
	{ MN(KORTESTW), "", "", { "K", "K" }, F_AVX512, 0, 1 },
	{ MN(KSHIFTLW), "", "", { "K", "K", "k" }, F_AVX512, 0, 1 },
	{ MN(KUNPCKBW), "", "", { "K", "K", "K" }, F_AVX512, 0, 1 },
};

_Static_assert(sizeof(fuzz_tmpls) / sizeof(fuzz_tmpls[0]) <= FUZZ_MAX_TMPLS,
	       "more templates than the generator has weights for");

const size_t fuzz_ntmpls = sizeof(fuzz_tmpls) / sizeof(fuzz_tmpls[0]);

bool fuzz_feat_ok(const struct fuzz_cpu *c, uint8_t f)
{
	switch (f) {
	case F_BASE: return true;
	case F_SSSE3: return c->ssse3;
	case F_SSE41: return c->sse41;
	case F_SSE42: return c->sse42;
	case F_AES: return c->aes;
	case F_PCLMUL: return c->pclmul;
	case F_AVX: return c->avx;
	case F_AVX2: return c->avx2;
	case F_FMA: return c->fma;
	case F_F16C: return c->f16c;
	case F_BMI1: return c->bmi1;
	case F_BMI2: return c->bmi2;
	case F_ADX: return c->adx;
	case F_LZCNT: return c->lzcnt;
	case F_POPCNT: return c->popcnt;
	case F_MOVBE: return c->movbe;
	case F_AVX512: return c->avx512;
	default: return false;
	}
}
