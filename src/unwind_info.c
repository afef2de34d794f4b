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
 * For unwinders that find frame information through dl_iterate_phdr()
 * (libunwind, LLVM's libunwind; libgcc uses _dl_find_object() on glibc
 * 2.35 and later, and the registration above before both): each region is
 * also shown as a loaded object (named, no file), with a PT_LOAD over its code
 * and a PT_GNU_EH_FRAME pointing at an .eh_frame_hdr (binary search table)
 * of its own, after the real objects.  That works where the interposition
 * does (libukprobes linked into the program or preloaded), not when it is
 * dlopen()ed later.
 *
 * For gdb (its JIT interface, "JIT Compilation Interface" in its manual):
 * an in-memory ELF relocatable object whose .text is NOBITS at the code's
 * address, whose .eh_frame is the one dl_iterate_phdr() readers get (the
 * object is laid out right before it, so nothing is copied; libgcc may get
 * another CIE, see struct arch_cfi), and whose symbol table
 * names the code.  gdb reads the list at the breakpoint it keeps on
 * __jit_debug_register_code, and all of it when it attaches.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

#include "internal.h"
#include "arch_libc.h"
#include "unwind_info.h"

/* libgcc_s */
extern void __register_frame(void *begin);
struct dwarf_eh_bases {
	void *tbase, *dbase, *func;
};
extern const void *_Unwind_Find_FDE(void *pc, struct dwarf_eh_bases *bases);

#define DW_EH_PE_absptr	0x00
#define DW_EH_PE_udata4	0x03
#define DW_EH_PE_sdata4	0x0b
#define DW_EH_PE_datarel 0x30
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
	uint8_t *eh_frame;		/* for gdb and dl_iterate_phdr() readers */
	size_t eh_len;
	uint8_t *gcc_eh_frame;		/* for libgcc (the same, or other CIE) */
	struct jit_code_entry jit;
	char *elf;			/* the debugger's object; eh_frame follows */
	size_t elf_len;
	const char *name;
	uint8_t *eh_frame_hdr;		/* for dl_iterate_phdr() readers */
	size_t eh_frame_hdr_len;
	ElfW(Phdr) phdr[2];
	struct ukp_unwind_region *next;
} __attribute__((aligned(64)));

/* The .eh_frame_hdr: version, three encodings, the .eh_frame's address,
 * the count, then (start, FDE) pairs relative to the header. */
#define HDR_HEAD	(4 + 8 + 4)

/* Registered regions, newest first (readers walk it without a lock). */
static struct ukp_unwind_region *_Atomic ukp_regions;

size_t ukp_unwind_space(size_t nfde)
{
	return sizeof(struct ukp_unwind_region) + ELF_AREA + 2 * (CIE_MAX + nfde * FDE_MAX + 8) +
	       HDR_HEAD + nfde * 8 + 8;
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

static uint8_t *put_cie(uint8_t *p, const struct arch_cfi *cfi, const uint8_t *insns,
		       size_t ninsns, uintptr_t personality)
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
	memcpy(p, insns, ninsns);
	p += ninsns;
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

/*
 * The .eh_frame_hdr at @at for the @nfde FDEs that follow the CIE (in the
 * order of their addresses, as written): the table encoding unwinders
 * search in (datarel | sdata4, relative to the header).
 */
static void build_hdr(struct ukp_unwind_region *r, uint8_t *at, size_t nfde)
{
	const uint8_t *e = r->eh_frame;
	uint32_t len, count = (uint32_t)nfde;
	uint64_t eh = (uintptr_t)r->eh_frame;
	int32_t *table = (int32_t *)(at + HDR_HEAD);

	at[0] = 1;				/* version */
	at[1] = DW_EH_PE_absptr;		/* eh_frame_ptr */
	at[2] = DW_EH_PE_udata4;		/* fde_count */
	at[3] = DW_EH_PE_datarel | DW_EH_PE_sdata4;	/* table */
	memcpy(at + 4, &eh, 8);
	memcpy(at + 12, &count, 4);
	memcpy(&len, e, 4);
	e += 4 + len;				/* past the CIE */
	for (size_t k = 0; k < nfde; k++) {
		uint64_t start;

		memcpy(&len, e, 4);
		memcpy(&start, e + 8, 8);
		table[2 * k] = (int32_t)((intptr_t)start - (intptr_t)at);
		table[2 * k + 1] = (int32_t)((intptr_t)e - (intptr_t)at);
		e += 4 + len;
	}
	r->eh_frame_hdr = at;
	r->eh_frame_hdr_len = HDR_HEAD + nfde * 8;
	r->phdr[0] = (ElfW(Phdr)){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X,
				   .p_vaddr = r->code, .p_memsz = r->len, .p_filesz = r->len,
				   .p_align = 1 };
	r->phdr[1] = (ElfW(Phdr)){ .p_type = PT_GNU_EH_FRAME, .p_flags = PF_R,
				   .p_vaddr = (uintptr_t)at, .p_memsz = r->eh_frame_hdr_len,
				   .p_filesz = r->eh_frame_hdr_len, .p_align = 4 };
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

/* An .eh_frame at @p: a CIE with @insns, the FDEs, the terminator.
 * Returns its end. */
static uint8_t *put_eh_frame(uint8_t *p, const struct arch_cfi *cfi, const uint8_t *insns,
			     size_t ninsns, uintptr_t personality, size_t nfde,
			     ukp_fde_fn fde, void *arg)
{
	uint8_t *cie = p;

	p = put_cie(p, cfi, insns, ninsns, personality);
	for (size_t k = 0; k < nfde; k++) {
		uint8_t fi[INSNS_MAX];
		uintptr_t start;
		size_t flen, n = fde(arg, k, &start, &flen, fi);

		p = put_fde(p, cie, start, flen, fi, n);
	}
	memset(p, 0, 4);		/* the terminator */
	return p + 4;
}

static uint8_t *align8(uint8_t *p)
{
	return (uint8_t *)(((uintptr_t)p + 7) & ~(uintptr_t)7);
}

struct ukp_unwind_region *ukp_unwind_build(void *space, uintptr_t code, size_t len,
					   const char *name, const struct arch_cfi *cfi,
					   uintptr_t personality, size_t nfde,
					   ukp_fde_fn fde, void *arg)
{
	struct ukp_unwind_region *r = space;
	uint8_t *p;

	r->code = code;
	r->len = len;
	r->name = name;
	r->elf = (char *)(r + 1);
	r->eh_frame = (uint8_t *)r->elf + ELF_AREA;
	p = put_eh_frame(r->eh_frame, cfi, cfi->cie_insns, cfi->cie_len, personality, nfde,
			 fde, arg);
	r->eh_len = (size_t)(p - r->eh_frame);
	p = align8(p);
	build_hdr(r, p, nfde);
	p = align8(p + r->eh_frame_hdr_len);
	r->gcc_eh_frame = r->eh_frame;
	if (cfi->gcc_cie_len) {
		r->gcc_eh_frame = p;
		put_eh_frame(p, cfi, cfi->gcc_cie_insns, cfi->gcc_cie_len, personality, nfde,
			     fde, arg);
	}
	build_elf(r, name);
	return r;
}

/* ---------------------------------------------------------------------- */
/* dl_iterate_phdr(): the loaded objects, then the regions                 */
/* ---------------------------------------------------------------------- */

typedef int (*ukp_phdr_cb)(struct dl_phdr_info *, size_t, void *);
typedef int (*ukp_iterate_fn)(ukp_phdr_cb, void *);

static ukp_iterate_fn _Atomic ukp_real_iterate;

/* Called before anything is set up, by a sanitizer's runtime among others
 * (AddressSanitizer checks its place among the objects before it has its
 * shadow memory): no instrumentation on these two. */
#define UKP_NO_SANITIZE __attribute__((no_sanitize("address", "undefined")))

/* glibc's (or the next interposer's).  Looked up at the first
 * registration, an API call, so that a signal handler's stack walk finds it
 * ready; a call before any registration looks it up then. */
UKP_NO_SANITIZE static ukp_iterate_fn ukp_iterate_next(void)
{
	ukp_iterate_fn f = atomic_load_explicit(&ukp_real_iterate, memory_order_acquire);

	if (!f) {
		f = (ukp_iterate_fn)dlvsym(RTLD_NEXT, "dl_iterate_phdr", UKP_GLIBC_BASE);
		if (!f)
			f = (ukp_iterate_fn)dlsym(RTLD_NEXT, "dl_iterate_phdr");
		atomic_store_explicit(&ukp_real_iterate, f, memory_order_release);
	}
	return f;
}

UKP_API UKP_NO_SANITIZE int dl_iterate_phdr(ukp_phdr_cb cb, void *data)
{
	ukp_iterate_fn next = ukp_iterate_next();
	int ret = next ? next(cb, data) : 0;

	for (struct ukp_unwind_region *r = atomic_load_explicit(&ukp_regions, memory_order_acquire);
	     r && !ret; r = r->next) {
		/* Named (not "", the program's own), no file behind it. */
		struct dl_phdr_info info = {
			.dlpi_addr = 0,
			.dlpi_name = r->name,
			.dlpi_phdr = r->phdr,
			.dlpi_phnum = 2,
		};

		ret = cb(&info, sizeof(info), data);
	}
	return ret;
}

void ukp_unwind_register(struct ukp_unwind_region *r)
{
	struct dwarf_eh_bases bases;

	ukp_iterate_next();
	r->next = atomic_load_explicit(&ukp_regions, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(&ukp_regions, &r->next, r,
						      memory_order_release, memory_order_relaxed))
		;

	__register_frame(r->gcc_eh_frame);
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
