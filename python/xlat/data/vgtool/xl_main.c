/*
 * xlat-vgtool: a Valgrind tool that streams a program's memory references and its
 * mmap/munmap/brk/mprotect/madvise/mremap calls (with results), in program order, as binary
 * records through a pipe to `xlat trace record`, which writes the xlat native trace format.
 *
 * Copyright (C) 2026 the xlat authors.
 *
 * This program is free software; you can redistribute it and/or modify it under the terms of
 * the GNU General Public License as published by the Free Software Foundation; either version 2
 * of the License, or (at your option) any later version.
 *
 * This program is distributed in the hope that it will be useful, but WITHOUT ANY WARRANTY;
 * without even the implied warranty of MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE. See
 * the GNU General Public License for more details.
 *
 * You should have received a copy of the GNU General Public License along with this program;
 * if not, see <https://www.gnu.org/licenses/>.
 *
 * It links Valgrind's static core and VEX libraries (GPL-2), so it is a separate helper program,
 * not part of the xlat library (MIT OR Apache-2.0), which only reads the byte stream it writes.
 *
 * Options:
 *   --xlat-fd=N          write records to file descriptor N (a pipe)
 *   --xlat-ino=I         ... only if N's inode is I (a forked child that closed N and reused the
 *                        number must not write into an unrelated file)
 *   --xlat-ifetch=yes|no also record one instruction fetch per instruction (default no)
 *   --xlat-inline=yes|no write records by inline IR (default yes; no: a helper call per access)
 *   --xlat-deps=yes|no   record each access's dependence on an earlier load (default yes)
 *
 * Stream: little-endian 64-bit words. Every record starts with a header word whose low byte is
 * the type; for accesses bits 8..15 hold the size, bits 16..47 the instructions retired since
 * the previous access (this one included) and bits 48..63 the dependence (how many accesses
 * back is the load whose value the address derives from, 0 = none), followed by the address.
 * Other types are followed by a fixed number of argument words (see the table in
 * tools/xlat-vgtool/README.md).
 *
 * Dependences, by register dataflow (as the ChampSim reader derives them, docs/timing.md): a
 * shadow of the running thread's guest state holds, per 8-byte slot, the sequence number of the
 * access whose loaded value the slot carries (0 = none). The instrumentation computes statically,
 * per superblock, the sources of every IR temporary: the loads of this superblock (of which only
 * the latest matters: it is newer than anything the shadow holds) or else the set of slots read
 * (`Get`) before this superblock wrote them. At run time a `Put` stores the newest source into the
 * slot's shadow (0 for a value that derives from no load), and an access's record carries
 * `seq - newest source` (when that is below 65536, else 0). Accesses are numbered by the access
 * events the decoder emits (an access larger than 64 bytes counts once per 64-byte piece).
 * Not tracked: values carried through memory (a pointer stored and loaded again depends on the
 * load, not on what the stored value derived from), the x87 register file (`GetI`/`PutI`), the
 * results of dirty helpers and of guarded loads (no sources), partial writes of a slot (which
 * replace its whole shadow when they derive from a load and keep it otherwise).
 */

#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_machine.h"
#include "pub_tool_options.h"
#include "pub_tool_aspacemgr.h"
#include "pub_tool_vkiscnums.h"
#include "pub_tool_guest.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_threadstate.h"

enum {
   T_LOAD = 0x00, T_STORE = 0x01, T_IFETCH = 0x02,
   T_MMAP = 0x10,     /* addr len prot flags */
   T_MUNMAP = 0x11,   /* addr len */
   T_BRK = 0x12,      /* new_brk */
   T_MPROTECT = 0x13, /* addr len prot */
   T_MADVISE = 0x14,  /* addr len advice */
   T_THREAD = 0x21,   /* tid */
   T_START = 0x30,    /* pid: a new program image starts (first run or after execve) */
   T_END = 0x31,      /* exit code: the image ends normally */
};

static Long clo_fd = -1;
static Long clo_ino = -1;
static Bool clo_ifetch = False;
static Bool clo_inline = True;
static Bool clo_deps = True;

static Int out_fd = -1;
static Bool enabled = False;

#define BUF_WORDS (1 << 17)
static ULong buf[BUF_WORDS];
/* Next free word; written by the instrumentation's inline IR as well as by C. */
static ULong *bp = buf;
/* Room for the largest record: flush when fewer words than this are left. */
#define SLACK 8
static ULong *const buf_limit = buf + BUF_WORDS - SLACK;

/* Instructions executed since the last recorded access, not yet attached to one. */
static ULong pending_instrs = 0;
static ThreadId last_tid = 0;
/* The thread number recorded for each Valgrind thread id. Valgrind's ids are slots that a new
   thread reuses once an earlier one has exited, so a recording that used them would give two
   threads one id; threads are numbered in the order they are created instead (main = 1). */
static UInt *thread_number = NULL; /* VG_N_THREADS entries (a run-time value) */
static UInt threads_created = 0;
static UInt last_number = 0;

/* Largest instruction count a header holds (bits 16..47); pending_instrs is kept below it. */
#define MAX_PENDING (1ULL << 31)

/* ---- dependences (--xlat-deps=yes) */
/* 8-byte slots of the guest state the shadow covers (amd64's state is about 1 KiB). */
#define MAX_SLOTS 256
#define SET_WORDS (MAX_SLOTS / 64)
/* Access events recorded so far (the decoder's numbering: one per 64-byte piece). The inline IR
   keeps it in a temporary per superblock and stores it back at every exit. */
static ULong seq = 0;
/* The running thread's shadow: per slot, the `seq` of the load whose value it carries. */
static ULong shadow[MAX_SLOTS];
/* Every thread's shadow while it does not run (VG_N_THREADS rows), NULL without deps. */
static ULong (*saved_shadow)[MAX_SLOTS] = NULL;
/* Guest state slots the superblocks may use (from the layout); 0 = deps off. */
static Int n_slots = 0;
/* The slot of the instruction pointer: never tracked (its value is a constant in the IR). */
static Int rip_slot = -1;

static void flush(void)
{
   const UChar *p = (const UChar *)buf;
   Long left = (Long)((bp - buf) * sizeof(ULong));
   bp = buf;
   if (!enabled)
      return;
   while (left > 0) {
      Int n = VG_(write)(out_fd, p, left > (1 << 20) ? (1 << 20) : (Int)left);
      if (n <= 0) {
         /* The reader went away: stop recording, let the program finish. */
         VG_(message)(Vg_UserMsg, "xlat-vgtool: write to fd %d failed; recording stopped\n",
                      out_fd);
         enabled = False;
         return;
      }
      p += n;
      left -= n;
   }
}

static inline void check_room(void)
{
   if (UNLIKELY(bp >= buf_limit))
      flush();
}

static void put1(ULong type, ULong a)
{
   bp[0] = type;
   bp[1] = a;
   bp += 2;
   check_room();
}

static void put2(ULong type, ULong a, ULong b)
{
   bp[0] = type;
   bp[1] = a;
   bp[2] = b;
   bp += 3;
   check_room();
}

static void put3(ULong type, ULong a, ULong b, ULong c)
{
   bp[0] = type;
   bp[1] = a;
   bp[2] = b;
   bp[3] = c;
   bp += 4;
   check_room();
}

static void put4(ULong type, ULong a, ULong b, ULong c, ULong d)
{
   bp[0] = type;
   bp[1] = a;
   bp[2] = b;
   bp[3] = c;
   bp[4] = d;
   bp += 5;
   check_room();
}

/* The hot path: one call per memory access. `hdr` holds type, size and the instructions of
   this superblock since the previous access. */
static VG_REGPARM(2) void rec_access(Addr a, UWord hdr)
{
   UWord size = (hdr >> 8) & 0xff;
   bp[0] = hdr + (pending_instrs << 16);
   bp[1] = a;
   pending_instrs = 0;
   seq += size <= 64 ? 1 : (size + 63) / 64;
   bp += 2;
   check_room();
}

/* ---------------------------------------------------------------- options */

static Bool xl_process_cmd_line_option(const HChar *arg)
{
   if VG_INT_CLO(arg, "--xlat-fd", clo_fd) {}
   else if VG_INT_CLO(arg, "--xlat-ino", clo_ino) {}
   else if VG_BOOL_CLO(arg, "--xlat-ifetch", clo_ifetch) {}
   else if VG_BOOL_CLO(arg, "--xlat-inline", clo_inline) {}
   else if VG_BOOL_CLO(arg, "--xlat-deps", clo_deps) {}
   else
      return False;
   return True;
}

static void xl_print_usage(void)
{
   VG_(printf)("    --xlat-fd=N              write binary records to fd N\n"
               "    --xlat-ino=I             only if fd N's inode is I\n"
               "    --xlat-ifetch=yes|no     record instruction fetches [no]\n"
               "    --xlat-inline=yes|no     write records by inline IR, not helper calls [yes]\n"
               "    --xlat-deps=yes|no       record dependences on earlier loads [yes]\n");
}

static void xl_print_debug_usage(void) {}

/* ---------------------------------------------------------------- address-space events */

static ULong prot_of(Bool r, Bool w, Bool x)
{
   return (r ? 1 : 0) | (w ? 2 : 0) | (x ? 4 : 0);
}

static void xl_new_mem_startup(Addr a, SizeT len, Bool rr, Bool ww, Bool xx, ULong di)
{
   /* The initial stack sits above a reservation into which it grows: give the stack VMA its
      whole reach, as Linux's grows-down stack VMA has. */
   if (a > 0) {
      NSegment const *below = VG_(am_find_nsegment)(a - 1);
      if (below && below->kind == SkResvn && below->end + 1 == a && ww) {
         len += a - below->start;
         a = below->start;
      }
   }
   {
      /* Some startup areas (Valgrind's trampoline page) are reported unaligned. */
      Addr end = VG_PGROUNDUP(a + len);
      a = VG_PGROUNDDN(a);
      len = end - a;
   }
   put4(T_MMAP, a, len, prot_of(rr, ww, xx), 0x22 /* MAP_PRIVATE|MAP_ANONYMOUS */);
}

static void xl_start_client_code(ThreadId tid, ULong blocks)
{
   UInt number = tid;
   if (thread_number != NULL && tid < VG_N_THREADS) {
      /* (A thread whose creation was not reported, if any, is numbered when it first runs.) */
      if (thread_number[tid] == 0)
         thread_number[tid] = ++threads_created;
      number = thread_number[tid];
   }
   if (tid != last_tid || number != last_number) {
      if (saved_shadow != NULL) {
         if (last_tid > 0 && last_tid < VG_N_THREADS)
            VG_(memcpy)(saved_shadow[last_tid], shadow, sizeof shadow);
         if (tid < VG_N_THREADS)
            VG_(memcpy)(shadow, saved_shadow[tid], sizeof shadow);
         else
            VG_(memset)(shadow, 0, sizeof shadow);
      }
      last_tid = tid;
      last_number = number;
      put1(T_THREAD, number);
   }
}

static void xl_thread_create(ThreadId parent, ThreadId child)
{
   /* A new thread (or a reused thread id) starts with registers that carry no load. */
   if (saved_shadow != NULL && child < VG_N_THREADS)
      VG_(memset)(saved_shadow[child], 0, sizeof shadow);
   if (thread_number != NULL && child < VG_N_THREADS)
      thread_number[child] = ++threads_created;
}

static void xl_pre_syscall(ThreadId tid, UInt sysno, UWord *args, UInt nArgs)
{
   if (sysno == __NR_execve || sysno == __NR_execveat)
      flush(); /* the new image's tool instance continues the stream */
}

static void xl_post_syscall(ThreadId tid, UInt sysno, UWord *args, UInt nArgs, SysRes res)
{
   if (sr_isError(res))
      return;
   switch (sysno) {
   case __NR_mmap:
      put4(T_MMAP, sr_Res(res), args[1], args[2], args[3]);
      break;
   case __NR_munmap:
      put2(T_MUNMAP, args[0], args[1]);
      break;
   case __NR_brk:
      put1(T_BRK, sr_Res(res));
      break;
   case __NR_mprotect:
      put3(T_MPROTECT, args[0], args[1], args[2]);
      break;
   case __NR_madvise:
      put3(T_MADVISE, args[0], args[1], args[2]);
      break;
   case __NR_mremap: {
      /* Recorded as munmap of the old range and mmap of the new one (contents move). */
      Addr na = sr_Res(res);
      NSegment const *s = VG_(am_find_nsegment)(na);
      ULong prot = s ? prot_of(s->hasR, s->hasW, s->hasX) : 3;
      put2(T_MUNMAP, args[0], args[1]);
      put4(T_MMAP, na, args[2], prot, 0x22);
      break;
   }
   default:
      break;
   }
}

static void xl_atfork_child(ThreadId tid)
{
   /* Only the recorded program's own line of images is traced, not its children. */
   bp = buf;
   enabled = False;
   if (out_fd >= 0)
      VG_(close)(out_fd);
   out_fd = -1;
}

/* ---------------------------------------------------------------- instrumentation */

/* Where a value comes from, as far as dependences go: the latest load of this superblock it
   derives from (`load` >= 0, an index into Sb.loads), or else the set of guest-state slots whose
   values at the superblock's entry it derives from (`entry`; empty: no load at all). A load of
   this superblock is newer than every value the shadow held at entry, so it dominates. */
typedef struct {
   Int load;
   ULong entry[SET_WORDS];
} Src;

/* A load record of this superblock: its first piece's number is `base + off + 1`, `base` the
   temporary holding `seq` at the last point it was read (`base_gen` counts those points). */
typedef struct {
   IRTemp base;
   Int base_gen;
   ULong off;
   IRTemp num; /* base + off + 1, once materialized */
} SbLoad;

/* The instrumentation state of one superblock. */
typedef struct {
   IRSB *sb;
   ULong instrs;    /* IMarks since the last point where the count was handed over */
   Bool deps;       /* dependences tracked in this superblock */
   Src *tmp;        /* sources of the input's temporaries */
   Int n_tmp;
   SbLoad *loads;
   Int n_loads, max_loads;
   IRTemp base;     /* `seq` as read at the last base point */
   Int base_gen;
   ULong off;       /* access events recorded since then */
   Src slot[MAX_SLOTS];        /* what each slot's shadow holds now (statically) */
   IRTemp entry_val[MAX_SLOTS]; /* shadow[s] at entry, once read */
   Bool written[MAX_SLOTS];    /* shadow[s] stored to in this superblock */
   ULong referenced[SET_WORDS]; /* entry slots some source refers to */
} Sb;

static void src_none(Src *s)
{
   Int i;
   s->load = -1;
   for (i = 0; i < SET_WORDS; i++)
      s->entry[i] = 0;
}

static Bool src_empty(const Src *s)
{
   Int i;
   if (s->load >= 0)
      return False;
   for (i = 0; i < SET_WORDS; i++)
      if (s->entry[i])
         return False;
   return True;
}

static Bool src_eq(const Src *a, const Src *b)
{
   Int i;
   if (a->load != b->load)
      return False;
   if (a->load >= 0)
      return True;
   for (i = 0; i < SET_WORDS; i++)
      if (a->entry[i] != b->entry[i])
         return False;
   return True;
}

/* a |= b */
static void src_union(Src *a, const Src *b)
{
   Int i;
   if (a->load >= 0 || b->load >= 0) {
      if (b->load > a->load)
         a->load = b->load;
      return;
   }
   for (i = 0; i < SET_WORDS; i++)
      a->entry[i] |= b->entry[i];
}

static void src_note(Sb *s, const Src *src)
{
   Int i;
   if (src->load < 0)
      for (i = 0; i < SET_WORDS; i++)
         s->referenced[i] |= src->entry[i];
}

static IRTemp new_tmp(Sb *s, IRType ty, IRExpr *e)
{
   IRTemp t = newIRTemp(s->sb->tyenv, ty);
   addStmtToIRSB(s->sb, IRStmt_WrTmp(t, e));
   return t;
}

static IRExpr *rd(IRTemp t)
{
   return IRExpr_RdTmp(t);
}

static IRExpr *c64(ULong v)
{
   return IRExpr_Const(IRConst_U64(v));
}

/* The sources of an atom (a temporary or a constant). */
static void src_atom(Sb *s, IRExpr *e, Src *out)
{
   src_none(out);
   if (s->deps && e != NULL && e->tag == Iex_RdTmp && e->Iex.RdTmp.tmp < s->n_tmp)
      *out = s->tmp[e->Iex.RdTmp.tmp];
}

/* The sources of a `WrTmp` right-hand side other than a load. */
static void src_expr(Sb *s, IRExpr *e, Src *out)
{
   Src a;
   Int i;
   src_none(out);
   switch (e->tag) {
   case Iex_RdTmp:
      src_atom(s, e, out);
      break;
   case Iex_Get: {
      Int lo = e->Iex.Get.offset / 8;
      Int hi = (e->Iex.Get.offset + sizeofIRType(e->Iex.Get.ty) - 1) / 8;
      for (i = lo; i <= hi && i < n_slots; i++)
         if (i != rip_slot)
            src_union(out, &s->slot[i]);
      break;
   }
   case Iex_Unop:
      src_atom(s, e->Iex.Unop.arg, out);
      break;
   case Iex_Binop:
      src_atom(s, e->Iex.Binop.arg1, out);
      src_atom(s, e->Iex.Binop.arg2, &a);
      src_union(out, &a);
      break;
   case Iex_Triop:
      src_atom(s, e->Iex.Triop.details->arg1, out);
      src_atom(s, e->Iex.Triop.details->arg2, &a);
      src_union(out, &a);
      src_atom(s, e->Iex.Triop.details->arg3, &a);
      src_union(out, &a);
      break;
   case Iex_Qop:
      src_atom(s, e->Iex.Qop.details->arg1, out);
      src_atom(s, e->Iex.Qop.details->arg2, &a);
      src_union(out, &a);
      src_atom(s, e->Iex.Qop.details->arg3, &a);
      src_union(out, &a);
      src_atom(s, e->Iex.Qop.details->arg4, &a);
      src_union(out, &a);
      break;
   case Iex_ITE:
      src_atom(s, e->Iex.ITE.cond, out);
      src_atom(s, e->Iex.ITE.iftrue, &a);
      src_union(out, &a);
      src_atom(s, e->Iex.ITE.iffalse, &a);
      src_union(out, &a);
      break;
   case Iex_CCall:
      for (i = 0; e->Iex.CCall.args[i] != NULL; i++) {
         src_atom(s, e->Iex.CCall.args[i], &a);
         src_union(out, &a);
      }
      break;
   default: /* constants, GetI (the x87 registers: not tracked) */
      break;
   }
   src_note(s, out);
}

/* The value of `shadow[slot]` at the superblock's entry, as a temporary. */
static IRTemp entry_value(Sb *s, Int slot)
{
   if (s->entry_val[slot] == IRTemp_INVALID) {
      tl_assert(!s->written[slot]);
      s->entry_val[slot] = new_tmp(s, Ity_I64, IRExpr_Load(Iend_LE, Ity_I64,
                                   mkIRExpr_HWord((HWord)&shadow[slot])));
   }
   return s->entry_val[slot];
}

/* The number of load `i`'s first piece, as a temporary. */
static IRTemp load_num(Sb *s, Int i)
{
   SbLoad *l = &s->loads[i];
   if (l->num == IRTemp_INVALID)
      l->num = new_tmp(s, Ity_I64, IRExpr_Binop(Iop_Add64, rd(l->base), c64(l->off + 1)));
   return l->num;
}

/* The newest access number a source carries (0: none), as an atom. */
static IRExpr *src_value(Sb *s, const Src *src)
{
   IRTemp best = IRTemp_INVALID;
   Int i;
   if (src->load >= 0)
      return rd(load_num(s, src->load));
   for (i = 0; i < n_slots; i++) {
      if (src->entry[i / 64] & (1ULL << (i % 64))) {
         IRTemp v = entry_value(s, i);
         if (best == IRTemp_INVALID) {
            best = v;
         } else {
            IRTemp lt = new_tmp(s, Ity_I1, IRExpr_Binop(Iop_CmpLT64U, rd(best), rd(v)));
            best = new_tmp(s, Ity_I64, IRExpr_ITE(rd(lt), rd(v), rd(best)));
         }
      }
   }
   return best == IRTemp_INVALID ? c64(0) : rd(best);
}

/* The dependence of an access whose address has sources `src`, the access's first piece
   numbered base + off + 1: an atom (a constant when known statically). */
static IRExpr *dep_of(Sb *s, const Src *src)
{
   IRExpr *v;
   IRTemp num, d, z, ok, d1, d2;
   if (!s->deps || src_empty(src))
      return c64(0);
   if (src->load >= 0 && s->loads[src->load].base_gen == s->base_gen) {
      ULong d = s->off - s->loads[src->load].off;
      return c64(d < 65536 ? d : 0);
   }
   v = src_value(s, src);
   num = new_tmp(s, Ity_I64, IRExpr_Binop(Iop_Add64, rd(s->base), c64(s->off + 1)));
   d = new_tmp(s, Ity_I64, IRExpr_Binop(Iop_Sub64, rd(num), v));
   /* 0 when the source is 0 (no load) or 65536 or more accesses back. */
   z = new_tmp(s, Ity_I1, IRExpr_Binop(Iop_CmpEQ64, v, c64(0)));
   ok = new_tmp(s, Ity_I1, IRExpr_Binop(Iop_CmpLT64U, rd(d), c64(65536)));
   d1 = new_tmp(s, Ity_I64, IRExpr_ITE(rd(ok), rd(d), c64(0)));
   d2 = new_tmp(s, Ity_I64, IRExpr_ITE(rd(z), c64(0), rd(d1)));
   return rd(d2);
}

/* Store `seq` = base + off (before an exit, a helper call, the end). */
static void seq_store(Sb *s)
{
   IRTemp t;
   if (!s->deps || s->off == 0)
      return;
   t = new_tmp(s, Ity_I64, IRExpr_Binop(Iop_Add64, rd(s->base), c64(s->off)));
   addStmtToIRSB(s->sb, IRStmt_Store(Iend_LE, mkIRExpr_HWord((HWord)&seq), rd(t)));
}

/* Start a new base point: read `seq` (at the start, and after a helper that counted). */
static void seq_load(Sb *s)
{
   if (!s->deps)
      return;
   s->base = new_tmp(s, Ity_I64, IRExpr_Load(Iend_LE, Ity_I64, mkIRExpr_HWord((HWord)&seq)));
   s->base_gen++;
   s->off = 0;
}

/* The slots [off, off + size) now hold a value with sources `src`: update the shadow. */
static void put_slots(Sb *s, Int off, Int size, const Src *src)
{
   Int lo = off / 8, hi = (off + size - 1) / 8, i;
   Bool partial = size < 8;
   for (i = lo; i <= hi && i < n_slots; i++) {
      IRExpr *v;
      if (i == rip_slot)
         continue;
      if (partial && src_empty(src))
         continue; /* the rest of the slot keeps its value, and its shadow */
      if (src_eq(&s->slot[i], src))
         continue;
      /* The entry value is still needed by sources that refer to it: read it first. */
      if (!s->written[i] && s->entry_val[i] == IRTemp_INVALID
          && (s->referenced[i / 64] & (1ULL << (i % 64))))
         (void)entry_value(s, i);
      v = src_value(s, src);
      addStmtToIRSB(s->sb, IRStmt_Store(Iend_LE, mkIRExpr_HWord((HWord)&shadow[i]), v));
      s->written[i] = True;
      s->slot[i] = *src;
   }
}

static IRExpr *hdr_expr(UInt type, Int size, ULong instrs)
{
   return mkIRExpr_HWord((HWord)(type | ((ULong)(size & 0xff) << 8) | (instrs << 16)));
}

static void flush_full(void)
{
   flush();
}

/* The record is written by inline IR (no helper call, which would save and restore the guest
   state): bp[0] = hdr + (pending_instrs << 16) + (dep << 48); bp[1] = addr; pending_instrs = 0;
   bp += 2; then a helper call only when the buffer is full. Guarded accesses use the helper. */
static void add_access_inline(IRSB *sb, UInt type, IRExpr *addr, Int size, ULong instrs,
                              IRExpr *dep)
{
   /* Flat IR: every operand an atom (a temporary or a constant). */
   IRTemp tbp = newIRTemp(sb->tyenv, Ity_I64);
   IRTemp tpend = newIRTemp(sb->tyenv, Ity_I64);
   IRTemp tsh = newIRTemp(sb->tyenv, Ity_I64);
   IRTemp thdr = newIRTemp(sb->tyenv, Ity_I64);
   IRTemp ta8 = newIRTemp(sb->tyenv, Ity_I64);
   IRTemp tnbp = newIRTemp(sb->tyenv, Ity_I64);
   IRTemp tfull = newIRTemp(sb->tyenv, Ity_I1);
   IRExpr *bp_addr = mkIRExpr_HWord((HWord)&bp);
   IRExpr *pend_addr = mkIRExpr_HWord((HWord)&pending_instrs);
   ULong hdr = type | ((ULong)(size & 0xff) << 8) | (instrs << 16);
   IRDirty *di;
   if (dep->tag == Iex_Const)
      hdr |= dep->Iex.Const.con->Ico.U64 << 48;
   addStmtToIRSB(sb, IRStmt_WrTmp(tbp, IRExpr_Load(Iend_LE, Ity_I64, bp_addr)));
   addStmtToIRSB(sb, IRStmt_WrTmp(tpend, IRExpr_Load(Iend_LE, Ity_I64, pend_addr)));
   addStmtToIRSB(sb, IRStmt_WrTmp(tsh, IRExpr_Binop(Iop_Shl64, IRExpr_RdTmp(tpend),
                                                    IRExpr_Const(IRConst_U8(16)))));
   addStmtToIRSB(sb, IRStmt_WrTmp(thdr, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(tsh),
                                                     IRExpr_Const(IRConst_U64(hdr)))));
   if (dep->tag != Iex_Const) {
      IRTemp tdep = newIRTemp(sb->tyenv, Ity_I64);
      IRTemp thdr2 = newIRTemp(sb->tyenv, Ity_I64);
      addStmtToIRSB(sb, IRStmt_WrTmp(tdep, IRExpr_Binop(Iop_Shl64, dep,
                                                        IRExpr_Const(IRConst_U8(48)))));
      addStmtToIRSB(sb, IRStmt_WrTmp(thdr2, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(thdr),
                                                         IRExpr_RdTmp(tdep))));
      thdr = thdr2;
   }
   addStmtToIRSB(sb, IRStmt_Store(Iend_LE, IRExpr_RdTmp(tbp), IRExpr_RdTmp(thdr)));
   addStmtToIRSB(sb, IRStmt_WrTmp(ta8, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(tbp),
                                                    IRExpr_Const(IRConst_U64(8)))));
   addStmtToIRSB(sb, IRStmt_Store(Iend_LE, IRExpr_RdTmp(ta8), addr));
   addStmtToIRSB(sb, IRStmt_Store(Iend_LE, pend_addr, IRExpr_Const(IRConst_U64(0))));
   addStmtToIRSB(sb, IRStmt_WrTmp(tnbp, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(tbp),
                                                     IRExpr_Const(IRConst_U64(16)))));
   addStmtToIRSB(sb, IRStmt_Store(Iend_LE, bp_addr, IRExpr_RdTmp(tnbp)));
   addStmtToIRSB(sb, IRStmt_WrTmp(tfull, IRExpr_Binop(Iop_CmpLE64U,
                     IRExpr_Const(IRConst_U64((ULong)(HWord)buf_limit)), IRExpr_RdTmp(tnbp))));
   di = unsafeIRDirty_0_N(0, "flush_full", VG_(fnptr_to_fnentry)(flush_full), mkIRExprVec_0());
   di->guard = IRExpr_RdTmp(tfull);
   addStmtToIRSB(sb, IRStmt_Dirty(di));
}

/* Append the record of an access whose address is `addr` (sources `asrc`, NULL: none). A load
   (`is_load_value`) becomes a source: returns its index in s->loads, else -1. */
static Int add_access(Sb *s, UInt type, IRExpr *addr, const Src *asrc, Int size, IRExpr *guard,
                      Bool is_load_value)
{
   IRExpr **argv;
   IRExpr *dep;
   Int li = -1;
   ULong pieces;
   Src none;
   if (size > 255)
      size = 255;
   pieces = size <= 64 ? 1 : (ULong)(size + 63) / 64;
   src_none(&none);
   dep = dep_of(s, asrc ? asrc : &none);
   if (is_load_value && s->deps && s->n_loads < s->max_loads) {
      li = s->n_loads++;
      s->loads[li].base = s->base;
      s->loads[li].base_gen = s->base_gen;
      s->loads[li].off = s->off;
      s->loads[li].num = IRTemp_INVALID;
   }
   if (guard == NULL && clo_inline) {
      add_access_inline(s->sb, type, addr, size, s->instrs, dep);
      s->instrs = 0;
      s->off += pieces;
      return li;
   }
   /* The helper counts `seq` itself (the guard may be false): hand it over, read it back. */
   seq_store(s);
   {
      IRExpr *hdr = hdr_expr(type, size, s->instrs);
      if (dep->tag == Iex_Const) {
         hdr = mkIRExpr_HWord((HWord)(hdr->Iex.Const.con->Ico.U64
                                      | (dep->Iex.Const.con->Ico.U64 << 48)));
      } else {
         IRTemp tdep = new_tmp(s, Ity_I64, IRExpr_Binop(Iop_Shl64, dep,
                                                        IRExpr_Const(IRConst_U8(48))));
         hdr = rd(new_tmp(s, Ity_I64, IRExpr_Binop(Iop_Add64, hdr, rd(tdep))));
      }
      argv = mkIRExprVec_2(addr, hdr);
   }
   IRDirty *di = unsafeIRDirty_0_N(2, "rec_access", VG_(fnptr_to_fnentry)(rec_access), argv);
   if (guard)
      di->guard = guard;
   if (s->deps) {
      /* The helper counts `seq`: said, so that VEX's tree builder does not move a load of
         `seq` (a base read before the call) past it. */
      di->mFx = Ifx_Modify;
      di->mAddr = mkIRExpr_HWord((HWord)&seq);
      di->mSize = sizeof seq;
   }
   addStmtToIRSB(s->sb, IRStmt_Dirty(di));
   s->instrs = 0;
   if (s->deps) {
      s->off += pieces; /* counted by the helper; seq_load starts over from `seq` */
      seq_load(s);
   }
   if (guard != NULL)
      li = -1; /* may not have happened */
   return li;
}

/* pending_instrs += n, inline (no helper call), kept below MAX_PENDING (the header's field). */
static void add_pending(Sb *s)
{
   IRSB *sb = s->sb;
   if (s->instrs == 0)
      return;
   IRTemp t1 = newIRTemp(sb->tyenv, Ity_I64);
   IRTemp t2 = newIRTemp(sb->tyenv, Ity_I64);
   IRTemp lt = newIRTemp(sb->tyenv, Ity_I1);
   IRTemp t3 = newIRTemp(sb->tyenv, Ity_I64);
   IRExpr *addr = mkIRExpr_HWord((HWord)&pending_instrs);
   addStmtToIRSB(sb, IRStmt_WrTmp(t1, IRExpr_Load(Iend_LE, Ity_I64, addr)));
   addStmtToIRSB(sb, IRStmt_WrTmp(t2, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(t1),
                                                   IRExpr_Const(IRConst_U64(s->instrs)))));
   addStmtToIRSB(sb, IRStmt_WrTmp(lt, IRExpr_Binop(Iop_CmpLT64U, IRExpr_RdTmp(t2),
                                                   c64(MAX_PENDING))));
   addStmtToIRSB(sb, IRStmt_WrTmp(t3, IRExpr_ITE(IRExpr_RdTmp(lt), IRExpr_RdTmp(t2),
                                                 c64(MAX_PENDING))));
   addStmtToIRSB(sb, IRStmt_Store(Iend_LE, addr, IRExpr_RdTmp(t3)));
   s->instrs = 0;
}

static Sb the_sb; /* instrumentation runs on one thread at a time */

static IRSB *xl_instrument(VgCallbackClosure *closure, IRSB *sbIn, const VexGuestLayout *layout,
                           const VexGuestExtents *vge, const VexArchInfo *archinfo_host,
                           IRType gWordTy, IRType hWordTy)
{
   Int i, j;
   Sb *s = &the_sb;
   IRTypeEnv *tyenv = sbIn->tyenv;
   Src a;

   s->sb = deepCopyIRSBExceptStmts(sbIn);
   s->instrs = 0;
   s->deps = clo_deps && n_slots > 0;
   s->n_tmp = tyenv->types_used;
   s->tmp = NULL;
   s->loads = NULL;
   s->n_loads = 0;
   s->max_loads = 0;
   s->base = IRTemp_INVALID;
   s->base_gen = 0;
   s->off = 0;
   if (s->deps) {
      s->tmp = VG_(malloc)("xl.tmp", (s->n_tmp + 1) * sizeof(Src));
      for (i = 0; i < s->n_tmp; i++)
         src_none(&s->tmp[i]);
      s->max_loads = 2 * sbIn->stmts_used + 2;
      s->loads = VG_(malloc)("xl.loads", s->max_loads * sizeof(SbLoad));
      for (i = 0; i < n_slots; i++) {
         src_none(&s->slot[i]);
         s->slot[i].entry[i / 64] = 1ULL << (i % 64);
         s->entry_val[i] = IRTemp_INVALID;
         s->written[i] = False;
      }
      for (i = 0; i < SET_WORDS; i++)
         s->referenced[i] = 0;
   }

   i = 0;
   while (i < sbIn->stmts_used && sbIn->stmts[i]->tag != Ist_IMark) {
      addStmtToIRSB(s->sb, sbIn->stmts[i]);
      i++;
   }
   seq_load(s);
   for (; i < sbIn->stmts_used; i++) {
      IRStmt *st = sbIn->stmts[i];
      if (!st || st->tag == Ist_NoOp)
         continue;
      switch (st->tag) {
      case Ist_IMark:
         s->instrs++;
         if (clo_ifetch)
            add_access(s, T_IFETCH, mkIRExpr_HWord((HWord)st->Ist.IMark.addr), NULL,
                       st->Ist.IMark.len, NULL, False);
         addStmtToIRSB(s->sb, st);
         break;
      case Ist_WrTmp: {
         IRExpr *data = st->Ist.WrTmp.data;
         IRTemp dst = st->Ist.WrTmp.tmp;
         if (data->tag == Iex_Load) {
            Int li;
            src_atom(s, data->Iex.Load.addr, &a);
            li = add_access(s, T_LOAD, data->Iex.Load.addr, &a,
                            sizeofIRType(data->Iex.Load.ty), NULL, True);
            if (s->deps && dst < s->n_tmp) {
               src_none(&s->tmp[dst]);
               s->tmp[dst].load = li;
            }
         } else if (s->deps && dst < s->n_tmp) {
            src_expr(s, data, &s->tmp[dst]);
         }
         addStmtToIRSB(s->sb, st);
         break;
      }
      case Ist_Put:
         if (s->deps) {
            IRExpr *data = st->Ist.Put.data;
            src_atom(s, data, &a);
            put_slots(s, st->Ist.Put.offset, sizeofIRType(typeOfIRExpr(tyenv, data)), &a);
         }
         addStmtToIRSB(s->sb, st);
         break;
      case Ist_Store: {
         IRExpr *data = st->Ist.Store.data;
         src_atom(s, st->Ist.Store.addr, &a);
         add_access(s, T_STORE, st->Ist.Store.addr, &a, sizeofIRType(typeOfIRExpr(tyenv, data)),
                    NULL, False);
         addStmtToIRSB(s->sb, st);
         break;
      }
      case Ist_StoreG: {
         IRStoreG *sg = st->Ist.StoreG.details;
         src_atom(s, sg->addr, &a);
         add_access(s, T_STORE, sg->addr, &a, sizeofIRType(typeOfIRExpr(tyenv, sg->data)),
                    sg->guard, False);
         addStmtToIRSB(s->sb, st);
         break;
      }
      case Ist_LoadG: {
         IRLoadG *lg = st->Ist.LoadG.details;
         IRType ty = Ity_INVALID, ty_wide = Ity_INVALID;
         typeOfIRLoadGOp(lg->cvt, &ty_wide, &ty);
         src_atom(s, lg->addr, &a);
         add_access(s, T_LOAD, lg->addr, &a, sizeofIRType(ty), lg->guard, False);
         if (s->deps && lg->dst < s->n_tmp)
            src_none(&s->tmp[lg->dst]); /* not tracked */
         addStmtToIRSB(s->sb, st);
         break;
      }
      case Ist_Dirty: {
         IRDirty *d = st->Ist.Dirty.details;
         if (d->mFx != Ifx_None) {
            src_atom(s, d->mAddr, &a);
            if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify)
               add_access(s, T_LOAD, d->mAddr, &a, d->mSize, NULL, False);
            if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify)
               add_access(s, T_STORE, d->mAddr, &a, d->mSize, NULL, False);
         }
         addStmtToIRSB(s->sb, st);
         if (s->deps) {
            /* Guest state the helper writes carries no load (not tracked). */
            Src none;
            src_none(&none);
            for (j = 0; j < d->nFxState; j++) {
               Int r;
               if (d->fxState[j].fx != Ifx_Write)
                  continue;
               for (r = 0; r <= d->fxState[j].nRepeats; r++)
                  put_slots(s, d->fxState[j].offset + r * d->fxState[j].repeatLen,
                            d->fxState[j].size, &none);
            }
         }
         break;
      }
      case Ist_CAS: {
         IRCAS *cas = st->Ist.CAS.details;
         Int size = sizeofIRType(typeOfIRExpr(tyenv, cas->dataLo));
         Int li;
         if (cas->dataHi != NULL)
            size *= 2;
         src_atom(s, cas->addr, &a);
         li = add_access(s, T_LOAD, cas->addr, &a, size, NULL, True);
         add_access(s, T_STORE, cas->addr, &a, size, NULL, False);
         if (s->deps) {
            if (cas->oldLo < s->n_tmp) {
               src_none(&s->tmp[cas->oldLo]);
               s->tmp[cas->oldLo].load = li;
            }
            if (cas->oldHi != IRTemp_INVALID && cas->oldHi < s->n_tmp) {
               src_none(&s->tmp[cas->oldHi]);
               s->tmp[cas->oldHi].load = li;
            }
         }
         addStmtToIRSB(s->sb, st);
         break;
      }
      case Ist_LLSC: {
         src_atom(s, st->Ist.LLSC.addr, &a);
         if (st->Ist.LLSC.storedata == NULL) {
            IRType ty = typeOfIRTemp(tyenv, st->Ist.LLSC.result);
            Int li = add_access(s, T_LOAD, st->Ist.LLSC.addr, &a, sizeofIRType(ty), NULL, True);
            if (s->deps && st->Ist.LLSC.result < s->n_tmp) {
               src_none(&s->tmp[st->Ist.LLSC.result]);
               s->tmp[st->Ist.LLSC.result].load = li;
            }
         } else {
            IRType ty = typeOfIRExpr(tyenv, st->Ist.LLSC.storedata);
            add_access(s, T_STORE, st->Ist.LLSC.addr, &a, sizeofIRType(ty), NULL, False);
         }
         addStmtToIRSB(s->sb, st);
         break;
      }
      case Ist_Exit:
         add_pending(s);
         seq_store(s);
         addStmtToIRSB(s->sb, st);
         break;
      default: /* PutI (the x87 registers: not tracked), MBE, AbiHint */
         addStmtToIRSB(s->sb, st);
         break;
      }
   }
   add_pending(s);
   seq_store(s);
   if (s->tmp)
      VG_(free)(s->tmp);
   if (s->loads)
      VG_(free)(s->loads);
   return s->sb;
}

/* ---------------------------------------------------------------- life cycle */

static void xl_post_clo_init(void)
{
   struct vg_stat st;
   if (clo_fd < 0) {
      VG_(message)(Vg_UserMsg, "xlat-vgtool: no --xlat-fd given; nothing is recorded\n");
      return;
   }
   if (VG_(fstat)((Int)clo_fd, &st) != 0) {
      /* Normal in an exec'd child of a fork: the descriptor was closed. */
      return;
   }
   if (clo_ino >= 0 && st.ino != (ULong)clo_ino)
      return;
   out_fd = (Int)clo_fd;
   enabled = True;
   thread_number = VG_(calloc)("xl.threads", VG_N_THREADS, sizeof *thread_number);
   if (clo_deps) {
      n_slots = (Int)((sizeof(VexGuestArchState) + 7) / 8);
      tl_assert(n_slots <= MAX_SLOTS);
      rip_slot = (Int)(offsetof(VexGuestArchState, guest_RIP) / 8);
      saved_shadow = VG_(calloc)("xl.shadow", VG_N_THREADS, sizeof shadow);
   }
   put1(T_START, VG_(getpid)());
}

static void xl_fini(Int exitcode)
{
   put1(T_END, (ULong)(Long)exitcode);
   flush();
}

static void xl_pre_clo_init(void)
{
   VG_(details_name)("xlat-vgtool");
   VG_(details_version)("1");
   VG_(details_description)("memory-reference recorder for the xlat simulator");
   VG_(details_copyright_author)("Copyright (C) 2026 the xlat authors; GPL-2.0-or-later.");
   VG_(details_bug_reports_to)("the xlat issue tracker");
   VG_(basic_tool_funcs)(xl_post_clo_init, xl_instrument, xl_fini);
   VG_(needs_command_line_options)(xl_process_cmd_line_option, xl_print_usage,
                                   xl_print_debug_usage);
   VG_(needs_syscall_wrapper)(xl_pre_syscall, xl_post_syscall);
   VG_(track_new_mem_startup)(xl_new_mem_startup);
   VG_(track_start_client_code)(xl_start_client_code);
   VG_(track_pre_thread_ll_create)(xl_thread_create);
   VG_(atfork)(NULL, NULL, xl_atfork_child);
}

VG_DETERMINE_INTERFACE_VERSION(xl_pre_clo_init)
