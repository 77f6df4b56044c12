import { endianness } from 'node:os';

/**
 * A seccomp filter for the sandboxed interpreter, as the classic BPF program bubblewrap loads with
 * `--seccomp FD` (an array of `struct sock_filter`, in the machine's byte order). It refuses with `EPERM` the
 * system calls that let a process leave or widen its sandbox: new namespaces (`unshare`, `setns`, `clone` with
 * a namespace flag), mounts, file handles (`open_by_handle_at` reads any file of the file system a handle names),
 * `ptrace` and cross-process memory access, keyrings, `bpf`, `perf_event_open`, `userfaultfd`, `io_uring`
 * (whose operations seccomp cannot see), modules, `kexec` and `reboot`. `clone3` answers `ENOSYS`, as container
 * runtimes do: its flags sit behind a pointer seccomp cannot read, and the C library then falls back to `clone`.
 * A system call of another ABI (i386 through `int 0x80`, x32) is refused too, so no second numbering slips by.
 *
 * Only x86-64 is described; elsewhere {@link sandboxFilter} gives `undefined` and the sandbox relies on its
 * other layers (no capabilities, a user namespace that may not create another).
 */

const AUDIT_ARCH_X86_64 = 0xc000003e;
const X32_SYSCALL_BIT = 0x40000000;

// Instruction classes of classic BPF.
const LOAD_WORD_ABSOLUTE = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JUMP_EQUAL = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JUMP_GREATER_EQUAL = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const JUMP_ANY_BIT = 0x45; // BPF_JMP | BPF_JSET | BPF_K
const RETURN = 0x06; // BPF_RET | BPF_K

const RET_ALLOW = 0x7fff0000;
const RET_ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;

// Offsets in struct seccomp_data.
const NR = 0;
const ARCH = 4;
const ARG0_LOW = 16; // little-endian: the low 32 bits of args[0]

/** CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET. */
const CLONE_NAMESPACE_FLAGS = 0x7e020000;

/** x86-64 numbers of the system calls refused with EPERM. */
const DENIED_X86_64: Readonly<Record<string, number>> = {
  ptrace: 101,
  syslog: 103,
  acct: 163,
  mount: 165,
  umount2: 166,
  swapon: 167,
  swapoff: 168,
  reboot: 169,
  pivot_root: 155,
  init_module: 175,
  delete_module: 176,
  kexec_load: 246,
  add_key: 248,
  request_key: 249,
  keyctl: 250,
  unshare: 272,
  perf_event_open: 298,
  name_to_handle_at: 303,
  open_by_handle_at: 304,
  setns: 308,
  process_vm_readv: 310,
  process_vm_writev: 311,
  finit_module: 313,
  kexec_file_load: 320,
  bpf: 321,
  userfaultfd: 323,
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
  open_tree: 428,
  move_mount: 429,
  fsopen: 430,
  fsconfig: 431,
  fsmount: 432,
  fspick: 433,
  mount_setattr: 442,
};
const CLONE_X86_64 = 56;
const CLONE3_X86_64 = 435;

interface Instruction {
  code: number;
  k: number;
  /** Labels jumped to when the test holds / fails (conditional jumps only). */
  ifTrue?: string;
  ifFalse?: string;
  label?: string;
}

/** Lays the instructions out as `struct sock_filter`s, turning labels into the relative offsets BPF uses. */
function assemble(program: Instruction[]): Buffer {
  const at = new Map<string, number>();
  program.forEach((instruction, index) => {
    if (instruction.label) at.set(instruction.label, index);
  });
  const little = endianness() === 'LE';
  const out = Buffer.alloc(program.length * 8);
  program.forEach((instruction, index) => {
    const offset = (label: string | undefined): number => {
      if (label === undefined) return 0;
      const distance = at.get(label)! - index - 1;
      if (distance < 0 || distance > 255) throw new Error(`seccomp jump to ${label} out of range`);
      return distance;
    };
    const base = index * 8;
    if (little) out.writeUInt16LE(instruction.code, base);
    else out.writeUInt16BE(instruction.code, base);
    out.writeUInt8(offset(instruction.ifTrue), base + 2);
    out.writeUInt8(offset(instruction.ifFalse), base + 3);
    if (little) out.writeUInt32LE(instruction.k >>> 0, base + 4);
    else out.writeUInt32BE(instruction.k >>> 0, base + 4);
  });
  return out;
}

function x86_64Filter(): Buffer {
  const program: Instruction[] = [
    { code: LOAD_WORD_ABSOLUTE, k: ARCH },
    { code: JUMP_EQUAL, k: AUDIT_ARCH_X86_64, ifTrue: 'native', ifFalse: 'deny' },
    { code: LOAD_WORD_ABSOLUTE, k: NR, label: 'native' },
    { code: JUMP_GREATER_EQUAL, k: X32_SYSCALL_BIT, ifTrue: 'deny', ifFalse: 'numbers' },
  ];
  const numbers = Object.values(DENIED_X86_64);
  numbers.forEach((number, index) => {
    program.push({
      code: JUMP_EQUAL,
      k: number,
      ifTrue: 'deny',
      ifFalse: index + 1 < numbers.length ? `n${index + 1}` : 'clone3',
      label: index === 0 ? 'numbers' : `n${index}`,
    });
  });
  program.push(
    { code: JUMP_EQUAL, k: CLONE3_X86_64, ifTrue: 'nosys', ifFalse: 'clone', label: 'clone3' },
    { code: JUMP_EQUAL, k: CLONE_X86_64, ifTrue: 'flags', ifFalse: 'allow', label: 'clone' },
    { code: LOAD_WORD_ABSOLUTE, k: ARG0_LOW, label: 'flags' },
    { code: JUMP_ANY_BIT, k: CLONE_NAMESPACE_FLAGS, ifTrue: 'deny', ifFalse: 'allow' },
    { code: RETURN, k: RET_ALLOW, label: 'allow' },
    { code: RETURN, k: RET_ERRNO | EPERM, label: 'deny' },
    { code: RETURN, k: RET_ERRNO | ENOSYS, label: 'nosys' },
  );
  return assemble(program);
}

let cached: Buffer | null | undefined;

/** The filter for this machine's architecture, or `undefined` where no syscall table is known. */
export function sandboxFilter(): Buffer | undefined {
  if (cached === undefined) cached = process.arch === 'x64' ? x86_64Filter() : null;
  return cached ?? undefined;
}

/** The system calls the filter refuses (their names), for documentation and tests. */
export const DENIED_SYSCALLS: readonly string[] = Object.freeze([
  ...Object.keys(DENIED_X86_64),
  'clone (with a namespace flag)',
]);
