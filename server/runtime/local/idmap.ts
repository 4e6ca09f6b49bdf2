/**
 * ID-mapped bind mounts (Linux ≥ 5.12): the files of an image or a volume are stored with their
 * real owners (root = 0) and appear, through the mount, owned by the box's host uid, so box root
 * owns "its" image files (copy-up through overlayfs keeps that) without a chown of anything.
 *
 * Debian 12's mount(8) (util-linux 2.38) ignores `X-mount.idmap`, and Node cannot make the
 * syscalls, so a few lines of Perl (perl-base is Essential in Debian) call open_tree,
 * mount_setattr(MOUNT_ATTR_IDMAP) and move_mount. The user namespace that carries the mapping
 * is a short-lived `unshare --user` process whose uid_map we (root) write.
 */
import { spawn } from "node:child_process"
import { writeFileSync } from "node:fs"
import { run } from "./host.ts"

// open_tree=428, move_mount=429, mount_setattr=442 are the same on every Linux architecture.
const PERL = `
use strict;
my ($nspid, $src, $dst, $ro) = @ARGV;
open(my $ns, "<", "/proc/$nspid/ns/user") or die "open userns: $!\\n";
my $tree = syscall(428, -100, $src, 0x1 | 0x80000 | 0x8000);
die "open_tree: $!\\n" if $tree < 0;
my $attr = pack("QQQQ", 0x100000 | ($ro ? 0x1 : 0) | 0x2 | 0x4, 0, 0, fileno($ns));
my $e1 = "";
syscall(442, $tree, $e1, 0x1000 | 0x8000, $attr, length($attr)) == 0 or die "mount_setattr: $!\\n";
my $e2 = "";
syscall(429, $tree, $e2, -100, $dst, 0x4) == 0 or die "move_mount: $!\\n";
`

/** Range of ids mapped: on-disk 0..65535 appear as hostUid..hostUid+65535. */
export const IDMAP_RANGE = 65_536

/**
 * Bind-mounts `src` on `dst` (an existing empty directory) so that on-disk uid/gid k appear as
 * `hostUid + k`. nosuid and nodev always; read-only when asked.
 */
export const idmapMount = async (src: string, dst: string, hostUid: number, readOnly: boolean): Promise<void> => {
  const holder = spawn("/usr/bin/unshare", ["--user", "--", "/bin/sh", "-c", "echo ready; read x"], {
    env: { PATH: "/usr/bin:/bin" },
    stdio: ["pipe", "pipe", "pipe"]
  })
  try {
    await new Promise<void>((resolve, reject) => {
      holder.stdout!.once("data", () => resolve())
      holder.once("exit", (code) => reject(new Error(`unshare --user exited (${code})`)))
      holder.once("error", reject)
    })
    const map = `0 ${hostUid} ${IDMAP_RANGE}\n`
    writeFileSync(`/proc/${holder.pid}/uid_map`, map)
    writeFileSync(`/proc/${holder.pid}/gid_map`, map)
    await run(["/usr/bin/perl", "-e", PERL, String(holder.pid), src, dst, readOnly ? "1" : ""])
  } finally {
    holder.stdin!.end()
    holder.kill("SIGKILL")
  }
}
