/**
 * The build sandbox: how buildah (and the `RUN` steps it starts) runs, never as root on the host.
 *
 *   perl (joins the build's cgroup, makes a user namespace whose 0..65535 are the cache's host
 *         uids hostUid..hostUid+65535, becomes its root)
 *   └ bwrap (new mount, PID, IPC, UTS and — for builds — network namespaces, owned by that user
 *           namespace; a root filesystem of the host's /usr and a few files of /etc, read-only,
 *           plus the deployment's cache, the build context and a private /tmp and /run)
 *     └ [node bridge: 127.0.0.1:3128 inside -> the egress proxy's unix socket on the host]
 *       └ buildah … --isolation chroot (its RUN steps: chroot into the image, in this sandbox)
 *
 * So a `RUN` step is root only inside the user namespace (an unprivileged host uid outside),
 * sees only the build's own processes, and has no network but the proxy; escaping buildah's
 * chroot lands in the sandbox's root, which holds nothing of the host but /usr. Base-image pulls
 * run in the same sandbox with the host's network (no code of the build runs in a pull).
 *
 * This module only builds argv; the builder runs it with the ProcessRunner.
 */
import { existsSync, lstatSync, readlinkSync } from "node:fs"

/** The proxy's port inside a build's network namespace. */
export const EGRESS_PORT = 3128
/** Where the egress proxy's socket directory appears inside the sandbox. */
export const EGRESS_DIR = "/run/slipway-egress"
export const EGRESS_SOCKET = "proxy.sock"
const NODE = "/run/slipway-node"

// unshare(2) and prctl(2) differ between architectures.
const UNSHARE_SYSCALL: Readonly<Record<string, number>> = { x64: 272, arm64: 97, riscv64: 97, loong64: 97 }
const PRCTL_SYSCALL: Readonly<Record<string, number>> = { x64: 157, arm64: 167, riscv64: 167, loong64: 167 }

/**
 * argv: unshare-nr prctl-nr host-uid range cgroup-procs-files(":"-joined or "-") command...
 * The parent stays outside (it writes the child's uid/gid maps, then waits and passes on the
 * exit status); the child joins the new user namespace as its root and execs the command. The
 * parent is the sandbox's subreaper: what the command leaves behind is reaped here, not left to
 * the host's init.
 */
const USERNS_PERL = `
use strict;
use POSIX ();
my ($nr, $prctl, $uid, $range, $procs, @cmd) = @ARGV;
syscall($prctl + 0, 36, 1, 0, 0, 0);
if ($procs ne "-") {
  for my $f (split /:/, $procs) {
    open(my $p, ">>", $f) or die "cgroup $f: $!\\n";
    print $p "$$\\n";
    close $p or die "cgroup $f: $!\\n";
  }
}
pipe(my $r, my $w) or die "pipe: $!\\n";
pipe(my $r2, my $w2) or die "pipe: $!\\n";
my $pid = fork() // die "fork: $!\\n";
if ($pid == 0) {
  close $r; close $w2;
  syscall($nr + 0, 0x10000000) == 0 or die "unshare(CLONE_NEWUSER): $!\\n";
  syswrite($w, "u"); close $w;
  sysread($r2, my $x, 1) == 1 or POSIX::_exit(1);
  $) = "0 0";
  POSIX::setgid(0) or die "setgid: $!\\n";
  POSIX::setuid(0) or die "setuid: $!\\n";
  exec { $cmd[0] } @cmd or die "exec $cmd[0]: $!\\n";
}
close $w; close $r2;
$SIG{TERM} = sub { kill "KILL", $pid; };
sysread($r, my $ok, 1) == 1 or die "could not make a user namespace\\n";
for my $f ("uid_map", "gid_map") {
  open(my $m, ">", "/proc/$pid/$f") or die "$f: $!\\n";
  print $m "0 $uid $range\\n";
  close $m or die "$f: $!\\n";
}
syswrite($w2, "m"); close $w2;
waitpid($pid, 0);
my $status = $?;
1 while waitpid(-1, 0) > 0;
exit(($status & 127) ? 128 + ($status & 127) : ($status >> 8));
`

/**
 * Inside the network namespace: listens on 127.0.0.1:<port>, pipes each connection to the
 * proxy's unix socket, then runs the command and exits with its status.
 */
const BRIDGE_JS =
  `const net=require("node:net"),{spawn}=require("node:child_process"),os=require("node:os");` +
  `const [port,sock,...cmd]=process.argv.slice(1);` +
  `const srv=net.createServer(c=>{const u=net.connect(sock);c.pipe(u).pipe(c);c.on("error",()=>u.destroy());u.on("error",()=>c.destroy())});` +
  `srv.on("error",e=>{console.error("egress bridge: "+e.message);process.exit(125)});` +
  `srv.listen(+port,"127.0.0.1",()=>{const p=spawn(cmd[0],cmd.slice(1),{stdio:"inherit"});` +
  `for(const s of ["SIGTERM","SIGINT","SIGHUP"])process.on(s,()=>p.kill("SIGKILL"));` +
  `p.on("error",e=>{console.error("egress bridge: "+e.message);process.exit(127)});` +
  `p.on("exit",(code,sig)=>process.exit(code===null?128+(os.constants.signals[sig]||9):code))})`

export interface SandboxBind {
  readonly source: string
  readonly target: string
  readonly readOnly?: boolean | undefined
}

export interface SandboxSpec {
  /** Host uid of the sandbox's root (its 65536 uids start there). */
  readonly hostUid: number
  readonly uidRange: number
  /** cgroup.procs files the sandbox joins before anything runs. */
  readonly cgroupProcs: ReadonlyArray<string>
  /**
   * `host`: the host's network (pulls only); `none`: a network namespace with only loopback;
   * `egressDir`: that, and the egress proxy listening on `egressDir`/proxy.sock answers at
   * 127.0.0.1:EGRESS_PORT (with the proxy variables set).
   */
  readonly network: "host" | "none" | { readonly egressDir: string }
  readonly binds: ReadonlyArray<SandboxBind>
  /** The whole environment of the command (plus the proxy variables with a proxy). */
  readonly env: Readonly<Record<string, string>>
  readonly argv: ReadonlyArray<string>
}

/** The top-level entries of `/` that are symlinks into /usr on a merged-/usr system, or directories to bind. */
const rootEntries = (): ReadonlyArray<readonly ["symlink" | "bind", string, string]> => {
  const out: Array<readonly ["symlink" | "bind", string, string]> = []
  for (const name of ["bin", "sbin", "lib", "lib32", "lib64", "libx32"]) {
    const path = `/${name}`
    try {
      const st = lstatSync(path)
      if (st.isSymbolicLink()) out.push(["symlink", readlinkSync(path), path])
      else if (st.isDirectory()) out.push(["bind", path, path])
    } catch {
      // absent on this host
    }
  }
  return out
}

const ETC_FILES = ["/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/hosts", "/etc/resolv.conf", "/etc/ssl", "/etc/ca-certificates", "/etc/localtime"]

/** The proxy variables a build's RUN steps see (buildah passes them on without baking them into the image). */
export const proxyEnv = (): Record<string, string> => {
  const url = `http://127.0.0.1:${EGRESS_PORT}`
  return { HTTP_PROXY: url, HTTPS_PROXY: url, http_proxy: url, https_proxy: url, NO_PROXY: "localhost,127.0.0.1,::1", no_proxy: "localhost,127.0.0.1,::1" }
}

/** The argv that runs `spec.argv` in the build sandbox. */
export const sandboxArgv = (spec: SandboxSpec): Array<string> => {
  const nr = UNSHARE_SYSCALL[process.arch]
  const prctl = PRCTL_SYSCALL[process.arch]
  if (nr === undefined || prctl === undefined) throw new Error(`build sandbox: unknown unshare/prctl syscall numbers on ${process.arch}`)
  const bwrap: Array<string> = ["/usr/bin/bwrap", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--hostname", "build"]
  if (spec.network !== "host") bwrap.push("--unshare-net")
  bwrap.push("--ro-bind", "/usr", "/usr")
  for (const [kind, a, b] of rootEntries()) kind === "symlink" ? bwrap.push("--symlink", a, b) : bwrap.push("--ro-bind", a, b)
  for (const f of ETC_FILES) if (existsSync(f)) bwrap.push("--ro-bind", f, f)
  bwrap.push("--dev", "/dev", "--proc", "/proc", "--dir", "/sys", "--tmpfs", "/tmp", "--tmpfs", "/run")
  for (const b of spec.binds) bwrap.push(b.readOnly ? "--ro-bind" : "--bind", b.source, b.target)
  const env: Record<string, string> = { ...spec.env }
  let argv = [...spec.argv]
  if (typeof spec.network === "object") {
    bwrap.push("--bind", spec.network.egressDir, EGRESS_DIR, "--ro-bind", process.execPath, NODE)
    Object.assign(env, proxyEnv())
    argv = [NODE, "-e", BRIDGE_JS, "--", String(EGRESS_PORT), `${EGRESS_DIR}/${EGRESS_SOCKET}`, ...argv]
  }
  bwrap.push("--clearenv")
  for (const [k, v] of Object.entries(env)) bwrap.push("--setenv", k, v)
  bwrap.push("--cap-add", "ALL", "--uid", "0", "--gid", "0", "--chdir", "/", "--")
  return [
    "/usr/bin/perl", "-e", USERNS_PERL,
    String(nr), String(prctl), String(spec.hostUid), String(spec.uidRange), spec.cgroupProcs.length > 0 ? spec.cgroupProcs.join(":") : "-",
    ...bwrap, ...argv
  ]
}
