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
 *
 * Stream: little-endian 64-bit words. Every record starts with a header word whose low byte is
 * the type; for accesses bits 8..15 hold the size and bits 16..63 the instructions retired since
 * the previous access (this one included), followed by the address. Other types are followed by
 * a fixed number of argument words (see the table in tools/xlat-vgtool/README.md).
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
   bp[0] = hdr + (pending_instrs << 16);
   bp[1] = a;
   pending_instrs = 0;
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
   else
      return False;
   return True;
}

static void xl_print_usage(void)
{
   VG_(printf)("    --xlat-fd=N              write binary records to fd N\n"
               "    --xlat-ino=I             only if fd N's inode is I\n"
               "    --xlat-ifetch=yes|no     record instruction fetches [no]\n"
               "    --xlat-inline=yes|no     write records by inline IR, not helper calls [yes]\n");
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
   if (tid != last_tid) {
      last_tid = tid;
      put1(T_THREAD, tid);
   }
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

static IRExpr *hdr_expr(UInt type, Int size, ULong instrs)
{
   return mkIRExpr_HWord((HWord)(type | ((ULong)(size & 0xff) << 8) | (instrs << 16)));
}

static void flush_full(void)
{
   flush();
}

/* The record is written by inline IR (no helper call, which would save and restore the guest
   state): bp[0] = hdr + (pending_instrs << 16); bp[1] = addr; pending_instrs = 0; bp += 2;
   then a helper call only when the buffer is full. Guarded accesses use the helper. */
static void add_access_inline(IRSB *sb, UInt type, IRExpr *addr, Int size, ULong instrs)
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
   addStmtToIRSB(sb, IRStmt_WrTmp(tbp, IRExpr_Load(Iend_LE, Ity_I64, bp_addr)));
   addStmtToIRSB(sb, IRStmt_WrTmp(tpend, IRExpr_Load(Iend_LE, Ity_I64, pend_addr)));
   addStmtToIRSB(sb, IRStmt_WrTmp(tsh, IRExpr_Binop(Iop_Shl64, IRExpr_RdTmp(tpend),
                                                    IRExpr_Const(IRConst_U8(16)))));
   addStmtToIRSB(sb, IRStmt_WrTmp(thdr, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(tsh),
                                                     IRExpr_Const(IRConst_U64(hdr)))));
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

static void add_access(IRSB *sb, UInt type, IRExpr *addr, Int size, ULong *instrs, IRExpr *guard)
{
   IRExpr **argv;
   if (size > 255)
      size = 255;
   if (guard == NULL && clo_inline) {
      add_access_inline(sb, type, addr, size, *instrs);
      *instrs = 0;
      return;
   }
   argv = mkIRExprVec_2(addr, hdr_expr(type, size > 255 ? 255 : size, *instrs));
   IRDirty *di = unsafeIRDirty_0_N(2, "rec_access", VG_(fnptr_to_fnentry)(rec_access), argv);
   if (guard)
      di->guard = guard;
   addStmtToIRSB(sb, IRStmt_Dirty(di));
   *instrs = 0;
}

/* pending_instrs += n, inline (no helper call). */
static void add_pending(IRSB *sb, ULong *instrs)
{
   if (*instrs == 0)
      return;
   IRTemp t1 = newIRTemp(sb->tyenv, Ity_I64);
   IRTemp t2 = newIRTemp(sb->tyenv, Ity_I64);
   IRExpr *addr = mkIRExpr_HWord((HWord)&pending_instrs);
   addStmtToIRSB(sb, IRStmt_WrTmp(t1, IRExpr_Load(Iend_LE, Ity_I64, addr)));
   addStmtToIRSB(sb, IRStmt_WrTmp(t2, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(t1),
                                                   IRExpr_Const(IRConst_U64(*instrs)))));
   addStmtToIRSB(sb, IRStmt_Store(Iend_LE, addr, IRExpr_RdTmp(t2)));
   *instrs = 0;
}

static IRSB *xl_instrument(VgCallbackClosure *closure, IRSB *sbIn, const VexGuestLayout *layout,
                           const VexGuestExtents *vge, const VexArchInfo *archinfo_host,
                           IRType gWordTy, IRType hWordTy)
{
   Int i;
   ULong instrs = 0; /* IMarks since the last point where the count was handed over */
   IRSB *sb = deepCopyIRSBExceptStmts(sbIn);
   IRTypeEnv *tyenv = sbIn->tyenv;

   i = 0;
   while (i < sbIn->stmts_used && sbIn->stmts[i]->tag != Ist_IMark) {
      addStmtToIRSB(sb, sbIn->stmts[i]);
      i++;
   }
   for (; i < sbIn->stmts_used; i++) {
      IRStmt *st = sbIn->stmts[i];
      if (!st || st->tag == Ist_NoOp)
         continue;
      switch (st->tag) {
      case Ist_IMark:
         instrs++;
         if (clo_ifetch)
            add_access(sb, T_IFETCH, mkIRExpr_HWord((HWord)st->Ist.IMark.addr),
                       st->Ist.IMark.len, &instrs, NULL);
         addStmtToIRSB(sb, st);
         break;
      case Ist_WrTmp: {
         IRExpr *data = st->Ist.WrTmp.data;
         if (data->tag == Iex_Load)
            add_access(sb, T_LOAD, data->Iex.Load.addr, sizeofIRType(data->Iex.Load.ty),
                       &instrs, NULL);
         addStmtToIRSB(sb, st);
         break;
      }
      case Ist_Store: {
         IRExpr *data = st->Ist.Store.data;
         add_access(sb, T_STORE, st->Ist.Store.addr, sizeofIRType(typeOfIRExpr(tyenv, data)),
                    &instrs, NULL);
         addStmtToIRSB(sb, st);
         break;
      }
      case Ist_StoreG: {
         IRStoreG *sg = st->Ist.StoreG.details;
         add_access(sb, T_STORE, sg->addr, sizeofIRType(typeOfIRExpr(tyenv, sg->data)),
                    &instrs, sg->guard);
         addStmtToIRSB(sb, st);
         break;
      }
      case Ist_LoadG: {
         IRLoadG *lg = st->Ist.LoadG.details;
         IRType ty = Ity_INVALID, ty_wide = Ity_INVALID;
         typeOfIRLoadGOp(lg->cvt, &ty_wide, &ty);
         add_access(sb, T_LOAD, lg->addr, sizeofIRType(ty), &instrs, lg->guard);
         addStmtToIRSB(sb, st);
         break;
      }
      case Ist_Dirty: {
         IRDirty *d = st->Ist.Dirty.details;
         if (d->mFx != Ifx_None) {
            if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify)
               add_access(sb, T_LOAD, d->mAddr, d->mSize, &instrs, NULL);
            if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify)
               add_access(sb, T_STORE, d->mAddr, d->mSize, &instrs, NULL);
         }
         addStmtToIRSB(sb, st);
         break;
      }
      case Ist_CAS: {
         IRCAS *cas = st->Ist.CAS.details;
         Int size = sizeofIRType(typeOfIRExpr(tyenv, cas->dataLo));
         if (cas->dataHi != NULL)
            size *= 2;
         add_access(sb, T_LOAD, cas->addr, size, &instrs, NULL);
         add_access(sb, T_STORE, cas->addr, size, &instrs, NULL);
         addStmtToIRSB(sb, st);
         break;
      }
      case Ist_LLSC: {
         if (st->Ist.LLSC.storedata == NULL) {
            IRType ty = typeOfIRTemp(tyenv, st->Ist.LLSC.result);
            add_access(sb, T_LOAD, st->Ist.LLSC.addr, sizeofIRType(ty), &instrs, NULL);
         } else {
            IRType ty = typeOfIRExpr(tyenv, st->Ist.LLSC.storedata);
            add_access(sb, T_STORE, st->Ist.LLSC.addr, sizeofIRType(ty), &instrs, NULL);
         }
         addStmtToIRSB(sb, st);
         break;
      }
      case Ist_Exit:
         add_pending(sb, &instrs);
         addStmtToIRSB(sb, st);
         break;
      default:
         addStmtToIRSB(sb, st);
         break;
      }
   }
   add_pending(sb, &instrs);
   return sb;
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
   VG_(atfork)(NULL, NULL, xl_atfork_child);
}

VG_DETERMINE_INTERFACE_VERSION(xl_pre_clo_init)
