// SPDX-License-Identifier: MIT
/*
 * unwind_info.c - DWARF call frame information for code made at run time,
 * registered with libgcc's unwinder and with gdb (see unwind_info.h).
 *
 * .eh_frame as the linker would write it: a CIE with augmentation "zP"
 * (a personality routine, an absolute pointer) or "z", then FDEs whose
 * addresses are absolute (DW_EH_PE_absptr, the default when the CIE has no
 * 'R'): no base address to agree on between libgcc and gdb.
 *
 * For gdb (its JIT interface, "JIT Compilation Interface" in its manual):
 * an in-memory ELF relocatable object whose .text is NOBITS at the code's
 * address, whose .eh_frame is the very bytes libgcc got (the object is laid
 * out right before them, so nothing is copied), and whose symbol table
 * names the code.  gdb reads the list at the breakpoint it keeps on
 * __jit_debug_register_code, and all of it when it attaches.
 */
#include <elf.h>
#include <pthread.h>
#include <string.h>

#include "internal.h"
#include "unwind_info.h"

/* libgcc_s */
extern void __register_frame(void *begin);
struct dwarf_eh_bases {
	void *tbase, *dbase, *func;
};
extern const void *_Unwind_Find_FDE(void *pc, struct dwarf_eh_bases *bases);

#define DW_EH_PE_absptr	0x00
#define DW_CFA_nop	0x00

#define CIE_MAX		64
#define FDE_MAX		64	/* header 25, instructions <= 32, padding */
#define INSNS_MAX	32
#define ELF_AREA	1024	/* the ELF header, section headers, tables */

/* ---------------------------------------------------------------------- */
/* The GDB JIT interface (names and layout fixed by gdb)                   */
/* ---------------------------------------------------------------------- */

struct jit_code_entry {
	struct jit_code_entry *next_entry;
	struct jit_code_entry *prev_entry;
	const char *symfile_addr;
	uint64_t symfile_size;
};

struct jit_descriptor {
	uint32_t version;
	uint32_t action_flag;	/* 0 none, 1 register, 2 unregister */
	struct jit_code_entry *relevant_entry;
	struct jit_code_entry *first_entry;
};

/* gdb sets a breakpoint here and reads the descriptor when it is hit. */
UKP_API __attribute__((noinline, used)) void __jit_debug_register_code(void)
{
	__asm__ volatile("" ::: "memory");
}

UKP_API struct jit_descriptor __jit_debug_descriptor = { 1, 0, NULL, NULL };

static pthread_mutex_t ukp_jit_mutex = PTHREAD_MUTEX_INITIALIZER;

/* ---------------------------------------------------------------------- */
/* Regions                                                                 */
/* ---------------------------------------------------------------------- */

enum { SH_NULL, SH_TEXT, SH_EH_FRAME, SH_SHSTRTAB, SH_STRTAB, SH_SYMTAB, SH_COUNT };

static const char ukp_shstrtab[] = "\0.text\0.eh_frame\0.shstrtab\0.strtab\0.symtab";
#define SHNAME_TEXT	1
#define SHNAME_EH_FRAME	7
#define SHNAME_SHSTRTAB	17
#define SHNAME_STRTAB	27
#define SHNAME_SYMTAB	35

struct ukp_unwind_region {
	uintptr_t code;
	size_t len;
	uint8_t *eh_frame;
	size_t eh_len;
	struct jit_code_entry jit;
	char *elf;			/* the debugger's object; eh_frame follows */
	size_t elf_len;
} __attribute__((aligned(64)));

size_t ukp_unwind_space(size_t nfde)
{
	return sizeof(struct ukp_unwind_region) + ELF_AREA + CIE_MAX + nfde * FDE_MAX + 8;
}

static uint8_t *put_uleb(uint8_t *p, unsigned long v)
{
	do {
		uint8_t b = v & 0x7f;

		v >>= 7;
		*p++ = b | (v ? 0x80 : 0);
	} while (v);
	return p;
}

static uint8_t *put_sleb(uint8_t *p, long v)
{
	for (;;) {
		uint8_t b = v & 0x7f;

		v >>= 7;	/* arithmetic: the sign stays */
		if ((v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40))) {
			*p++ = b;
			return p;
		}
		*p++ = b | 0x80;
	}
}

/* Pad the entry that starts at @start to 8 bytes and fill in its length. */
static uint8_t *close_entry(uint8_t *start, uint8_t *p)
{
	uint32_t len;

	while ((p - start) % 8)
		*p++ = DW_CFA_nop;
	len = (uint32_t)(p - start - 4);
	memcpy(start, &len, 4);
	return p;
}

static uint8_t *put_cie(uint8_t *p, const struct arch_cfi *cfi, uintptr_t personality)
{
	uint8_t *start = p;

	p += 4;				/* length */
	memset(p, 0, 4);		/* CIE id */
	p += 4;
	*p++ = 1;			/* version */
	if (personality) {
		memcpy(p, "zP", 3);
		p += 3;
	} else {
		memcpy(p, "z", 2);
		p += 2;
	}
	p = put_uleb(p, cfi->code_align);
	p = put_sleb(p, cfi->data_align);
	*p++ = cfi->ra_column;
	if (personality) {
		p = put_uleb(p, 1 + sizeof(uint64_t));
		*p++ = DW_EH_PE_absptr;
		memcpy(p, &personality, sizeof(uint64_t));
		p += sizeof(uint64_t);
	} else {
		p = put_uleb(p, 0);
	}
	memcpy(p, cfi->cie_insns, cfi->cie_len);
	p += cfi->cie_len;
	return close_entry(start, p);
}

static uint8_t *put_fde(uint8_t *p, const uint8_t *cie, uintptr_t start, size_t len,
			const uint8_t *insns, size_t n)
{
	uint8_t *fde = p;
	uint32_t cie_ptr;
	uint64_t v;

	p += 4;				/* length */
	cie_ptr = (uint32_t)(p - cie);	/* back to the CIE from here */
	memcpy(p, &cie_ptr, 4);
	p += 4;
	v = start;
	memcpy(p, &v, 8);
	p += 8;
	v = len;
	memcpy(p, &v, 8);
	p += 8;
	p = put_uleb(p, 0);		/* augmentation data */
	memcpy(p, insns, n);
	p += n;
	return close_entry(fde, p);
}

/* The debugger's object: header, section headers, names, one symbol; the
 * .eh_frame is what follows the area. */
static void build_elf(struct ukp_unwind_region *r, const char *name)
{
	char *img = r->elf;
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	Elf64_Shdr *sh = (Elf64_Shdr *)(img + sizeof(*eh));
	size_t pos = sizeof(*eh) + SH_COUNT * sizeof(*sh), namelen = strlen(name) + 1;
	Elf64_Sym *sym;

	if (namelen > 256)
		namelen = 256;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_REL;
	eh->e_machine = arch_elf_machine();
	eh->e_version = EV_CURRENT;
	eh->e_ehsize = sizeof(*eh);
	eh->e_shoff = sizeof(*eh);
	eh->e_shentsize = sizeof(*sh);
	eh->e_shnum = SH_COUNT;
	eh->e_shstrndx = SH_SHSTRTAB;

	sh[SH_SHSTRTAB] = (Elf64_Shdr){ .sh_name = SHNAME_SHSTRTAB, .sh_type = SHT_STRTAB,
					.sh_offset = pos, .sh_size = sizeof(ukp_shstrtab),
					.sh_addralign = 1 };
	memcpy(img + pos, ukp_shstrtab, sizeof(ukp_shstrtab));
	pos += sizeof(ukp_shstrtab);

	sh[SH_STRTAB] = (Elf64_Shdr){ .sh_name = SHNAME_STRTAB, .sh_type = SHT_STRTAB,
				      .sh_offset = pos, .sh_size = namelen + 1, .sh_addralign = 1 };
	img[pos] = 0;
	memcpy(img + pos + 1, name, namelen - 1);
	img[pos + namelen] = 0;
	pos = (pos + namelen + 1 + 7) & ~(size_t)7;

	sh[SH_SYMTAB] = (Elf64_Shdr){ .sh_name = SHNAME_SYMTAB, .sh_type = SHT_SYMTAB,
				      .sh_offset = pos, .sh_size = 2 * sizeof(Elf64_Sym),
				      .sh_link = SH_STRTAB, .sh_info = 1,
				      .sh_addralign = 8, .sh_entsize = sizeof(Elf64_Sym) };
	sym = (Elf64_Sym *)(img + pos);
	/* A relocatable object's symbol is relative to its section. */
	sym[1] = (Elf64_Sym){ .st_name = 1, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
			      .st_shndx = SH_TEXT, .st_value = 0, .st_size = r->len };

	sh[SH_TEXT] = (Elf64_Shdr){ .sh_name = SHNAME_TEXT, .sh_type = SHT_NOBITS,
				    .sh_flags = SHF_ALLOC | SHF_EXECINSTR, .sh_addr = r->code,
				    .sh_offset = ELF_AREA, .sh_size = r->len, .sh_addralign = 16 };
	sh[SH_EH_FRAME] = (Elf64_Shdr){ .sh_name = SHNAME_EH_FRAME, .sh_type = SHT_PROGBITS,
					.sh_flags = SHF_ALLOC, .sh_addr = (uintptr_t)r->eh_frame,
					.sh_offset = ELF_AREA, .sh_size = r->eh_len,
					.sh_addralign = 8 };
	r->elf_len = ELF_AREA + r->eh_len;
}

struct ukp_unwind_region *ukp_unwind_build(void *space, uintptr_t code, size_t len,
					   const char *name, const struct arch_cfi *cfi,
					   uintptr_t personality, size_t nfde,
					   ukp_fde_fn fde, void *arg)
{
	struct ukp_unwind_region *r = space;
	uint8_t *p, *cie;

	r->code = code;
	r->len = len;
	r->elf = (char *)(r + 1);
	r->eh_frame = (uint8_t *)r->elf + ELF_AREA;
	p = cie = r->eh_frame;
	p = put_cie(p, cfi, personality);
	for (size_t k = 0; k < nfde; k++) {
		uint8_t insns[INSNS_MAX];
		uintptr_t start;
		size_t flen, n = fde(arg, k, &start, &flen, insns);

		p = put_fde(p, cie, start, flen, insns, n);
	}
	memset(p, 0, 4);		/* the terminator */
	p += 4;
	r->eh_len = (size_t)(p - r->eh_frame);
	build_elf(r, name);
	return r;
}

void ukp_unwind_register(struct ukp_unwind_region *r)
{
	struct dwarf_eh_bases bases;

	__register_frame(r->eh_frame);
	/* libgcc sorts a new object's FDEs (allocating) at the first lookup
	 * that needs them: make that happen here, not in a signal handler's
	 * backtrace(). */
	_Unwind_Find_FDE((void *)r->code, &bases);

	pthread_mutex_lock(&ukp_jit_mutex);
	r->jit.symfile_addr = r->elf;
	r->jit.symfile_size = r->elf_len;
	r->jit.prev_entry = NULL;
	r->jit.next_entry = __jit_debug_descriptor.first_entry;
	if (r->jit.next_entry)
		r->jit.next_entry->prev_entry = &r->jit;
	__jit_debug_descriptor.first_entry = &r->jit;
	__jit_debug_descriptor.relevant_entry = &r->jit;
	__jit_debug_descriptor.action_flag = 1;		/* JIT_REGISTER_FN */
	__jit_debug_register_code();
	__jit_debug_descriptor.action_flag = 0;
	pthread_mutex_unlock(&ukp_jit_mutex);
}
