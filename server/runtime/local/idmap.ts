/**
 * ID-mapped bind mounts (Linux ≥ 5.12): the files of an image or a volume are stored with their
 * real owners (root = 0) and appear, through the mount, owned by the box's host uid, so box root
 * owns "its" image files (copy-up through overlayfs keeps that) without a chown of anything.
 *
 * Debian 12's mount(8) (util-linux 2.38) ignores `X-mount.idmap`, and Node cannot make the
 * syscalls, so a few lines of Perl (perl-base is Essential in Debian) call open_tree,
 * mount_setattr(MOUNT_ATTR_IDMAP) and move_mount. The user namespace that carries the mapping
 * belongs to a short-lived child of that Perl process, whose uid_map/gid_map it (root) writes.
 */
import { Effect } from "effect"
import type { CommandFailed } from "../ProcessRunner.ts"
import type { HostCommands } from "./mounts.ts"

// open_tree=428, move_mount=429, mount_setattr=442 are the same on every Linux architecture;
// unshare is not (x86_64 272, aarch64 97), so its number comes from Node's process.arch.
const PERL = `
use strict;
my ($unshare, $uid, $range, $src, $dst, $ro) = @ARGV;
pipe(my $r, my $w) or die "pipe: $!\n";
pipe(my $r2, my $w2) or die "pipe: $!\n";
my $pid = fork() // die "fork: $!\n";
if ($pid == 0) {
  close $r; close $w2;
  syscall($unshare + 0, 0x10000000) == 0 or exit 1;
  syswrite($w, "u"); close $w;
  sysread($r2, my $x, 1);
  exit 0;
}
close $w; close $r2;
sysread($r, my $ok, 1) == 1 or die "unshare(CLONE_NEWUSER) failed\n";
for my $f ("uid_map", "gid_map") {
  open(my $m, ">", "/proc/$pid/$f") or die "$f: $!\n";
  print $m "0 $uid $range\n";
  close $m or die "$f: $!\n";
}
open(my $ns, "<", "/proc/$pid/ns/user") or die "open userns: $!\n";
my $tree = syscall(428, -100, $src, 0x1 | 0x80000 | 0x8000);
die "open_tree: $!\n" if $tree < 0;
my $attr = pack("QQQQ", 0x100000 | ($ro ? 0x1 : 0) | 0x2 | 0x4, 0, 0, fileno($ns));
my $e1 = "";
syscall(442, $tree, $e1, 0x1000 | 0x8000, $attr, length($attr)) == 0 or die "mount_setattr: $!\n";
my $e2 = "";
syscall(429, $tree, $e2, -100, $dst, 0x4) == 0 or die "move_mount: $!\n";
close $w2;
waitpid($pid, 0);
`

const UNSHARE_SYSCALL: Readonly<Record<string, number>> = { x64: 272, arm64: 97, riscv64: 97, loong64: 97 }

/** Range of ids mapped: on-disk 0..65535 appear as hostUid..hostUid+65535. */
export const IDMAP_RANGE = 65_536

/**
 * Bind-mounts `src` on `dst` (an existing empty directory) so that on-disk uid/gid k appear as
 * `hostUid + k`. nosuid and nodev always; read-only when asked.
 */
export const idmapMount = (host: HostCommands, src: string, dst: string, hostUid: number, readOnly: boolean): Effect.Effect<void, CommandFailed | Error> => {
  const nr = UNSHARE_SYSCALL[process.arch]
  if (nr === undefined) return Effect.fail(new Error(`id-mapped mounts: unknown unshare syscall number on ${process.arch}`))
  return Effect.asVoid(host.run(["/usr/bin/perl", "-e", PERL, String(nr), String(hostUid), String(IDMAP_RANGE), src, dst, readOnly ? "1" : ""]))
}
