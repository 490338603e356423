import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);
import {
  DEFAULT_MAX_BYTES,
  KernelStore,
  defaultCacheRoot,
  referenceRoot
} from "./chunk-HNFTTV67.js";
import {
  EXIT,
  GateError,
  HF_HUB,
  InfraError,
  InputError,
  NPU_LOCK,
  SETUP_FILE,
  findPythonAsync,
  fsError,
  generationName,
  generationOfName,
  generationOfPci,
  hfHome,
  hfHubCache,
  hfOffline,
  keptTester,
  oneLine,
  parseSetupFile,
  testPython,
  testPythonAsync,
  writeAtomic
} from "./chunk-7HMQRJMS.js";
import "./chunk-A6YGPO6E.js";

// src/agent/cli.ts
import { parseArgs } from "node:util";
import { readFileSync as readFileSync9 } from "node:fs";
import { resolve as resolve8 } from "node:path";

// src/agent/machine.ts
import { spawn as spawnAsync, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, readlinkSync, statfsSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { homedir, hostname, userInfo } from "node:os";
var DEFAULT_TIMEOUT_MS = 15e3;
var KEEP_BYTES = 16 * 1024 * 1024;
function spawnOne(cmd, args, env, timeoutMs) {
  const r = spawnSync(cmd, args, { encoding: "utf8", env, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, stdio: ["ignore", "pipe", "pipe"] });
  if (r.error) {
    const code = r.error.code;
    if (code === "ENOENT") return { status: null, stdout: "", stderr: "", missing: true, error: "not found" };
    if (code === "ETIMEDOUT") return { status: null, stdout: r.stdout ?? "", stderr: r.stderr ?? "", error: `timed out after ${timeoutMs / 1e3}s` };
    return { status: null, stdout: r.stdout ?? "", stderr: r.stderr ?? "", error: r.error.message };
  }
  return { status: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
}
function spawnDetached(cmd, args, env) {
  const { RUNNER_TRACKING_ID: _drop, ...rest } = env;
  void _drop;
  try {
    const child = spawnAsync(cmd, args, { env: rest, detached: true, stdio: "ignore" });
    child.on("error", () => {
    });
    child.unref();
    return { status: 0, stdout: "", stderr: "" };
  } catch (e) {
    return { status: null, stdout: "", stderr: "", error: e.message };
  }
}
function execReal(cmd, args, env, o) {
  return new Promise((done) => {
    let child;
    const out = { status: null, stdout: "", stderr: "", bytes: 0, truncated: false, stopped: false, timedOut: false };
    try {
      child = spawnAsync(cmd, args, { env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    } catch (e) {
      done({ ...out, error: e.message });
      return;
    }
    let finished = false;
    let partial = "";
    const kill = () => {
      try {
        if (child.pid) process.kill(-child.pid, "SIGKILL");
      } catch {
      }
      try {
        child.kill("SIGKILL");
      } catch {
      }
    };
    const finish = (extra) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      if (partial && o.onLine && !out.stopped && !out.truncated) o.onLine(partial);
      else if (partial && !o.onLine) out.stdout += partial;
      partial = "";
      child.stdout?.destroy();
      child.stderr?.destroy();
      child.unref();
      done({ ...out, ...extra });
    };
    const timer = setTimeout(() => {
      kill();
      finish({ timedOut: true, error: `timed out after ${o.timeoutMs / 1e3}s` });
    }, o.timeoutMs);
    child.on("error", (e) => finish(e.code === "ENOENT" ? { missing: true, error: "not found" } : { error: e.message }));
    child.stderr.on("data", (b) => {
      if (out.stderr.length < KEEP_BYTES) out.stderr += b.toString("utf8");
    });
    child.stdout.on("data", (b) => {
      if (finished) return;
      let chunk = b;
      if (o.maxBytes !== void 0 && out.bytes + chunk.length > o.maxBytes) {
        chunk = chunk.subarray(0, Math.max(0, o.maxBytes - out.bytes));
        out.truncated = true;
      }
      out.bytes += chunk.length;
      const text = partial + chunk.toString("utf8");
      if (!o.onLine) {
        if (out.stdout.length < KEEP_BYTES) out.stdout += text;
        partial = "";
      } else {
        const lines = text.split("\n");
        const last = lines.pop();
        partial = out.truncated ? "" : last;
        for (const l of lines) {
          if (o.onLine(l) === false) {
            out.stopped = true;
            break;
          }
        }
      }
      if (out.truncated || out.stopped) {
        kill();
        finish({});
      }
    });
    child.on("close", (code) => finish({ status: code }));
  });
}
function execStub(fn, args, o) {
  const r = fn(args, { timeoutMs: o.timeoutMs });
  const out = { ...r, stdout: "", bytes: 0, truncated: false, stopped: false, timedOut: /timed out/.test(r.error ?? "") };
  let text = r.stdout;
  if (o.maxBytes !== void 0 && Buffer.byteLength(text) > o.maxBytes) {
    text = Buffer.from(text).subarray(0, o.maxBytes).toString("utf8");
    out.truncated = true;
  }
  out.bytes = Buffer.byteLength(text);
  if (!o.onLine) {
    out.stdout = text;
    return out;
  }
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "" || out.truncated) lines.pop();
  for (const l of lines) {
    if (o.onLine(l) === false) {
      out.stopped = true;
      out.status = null;
      break;
    }
  }
  return out;
}
var Machine = class {
  root;
  env;
  python;
  /** The same test without blocking: the injected tester (tests) as is, else Python run in the background. */
  pythonAsync;
  statfs;
  cwd;
  sleep;
  now;
  uid;
  hostname;
  commands;
  spawn;
  timeoutMs;
  constructor(o = {}) {
    this.root = resolve(o.root ?? "/");
    this.env = o.env ?? process.env;
    this.commands = o.commands ?? {};
    this.spawn = o.spawn ?? true;
    this.timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.python = o.python ?? testPython;
    const injected = o.python;
    this.pythonAsync = injected ? async (command) => injected(command) : testPythonAsync;
    this.statfs = o.statfs ?? ((p) => {
      const s = statfsSync(p);
      return { bavail: Number(s.bavail), bsize: Number(s.bsize), blocks: Number(s.blocks) };
    });
    this.cwd = o.cwd ?? process.cwd();
    this.sleep = o.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.now = o.now ?? (() => /* @__PURE__ */ new Date());
    this.uid = o.uid ?? (typeof process.getuid === "function" ? process.getuid() : -1);
    this.hostname = o.hostname ?? hostname();
  }
  /** A system path under the root prefix: path('/proc/locks'). */
  path(p) {
    return this.root === "/" ? p : join(this.root, p);
  }
  exists(p) {
    return existsSync(this.path(p));
  }
  read(p) {
    try {
      return readFileSync(this.path(p), "utf8");
    } catch {
      return null;
    }
  }
  readBytes(p) {
    try {
      return readFileSync(this.path(p));
    } catch {
      return null;
    }
  }
  list(p) {
    try {
      return readdirSync(this.path(p)).sort();
    } catch {
      return null;
    }
  }
  /** The file's device (major, minor, as /proc/locks prints them) and inode, or null. */
  fileId(p) {
    try {
      const s = statSync(this.path(p), { bigint: true });
      const d = s.dev;
      const major = Number(d >> 8n & 0xfffn | d >> 32n & ~0xfffn);
      const minor = Number(d & 0xffn | d >> 12n & ~0xffn);
      return { major, minor, ino: Number(s.ino) };
    } catch {
      return null;
    }
  }
  /** The target of a symlink under the root (as written in the link), or null. */
  readlink(p) {
    try {
      return readlinkSync(this.path(p));
    } catch {
      return null;
    }
  }
  /** A second number: how much to wait (timeoutMs), or RunOptions. */
  run(cmd, args = [], opts) {
    const o = typeof opts === "number" ? { timeoutMs: opts } : opts ?? {};
    const stub = this.commands[cmd];
    if (stub) return stub(args, o);
    if (!this.spawn) return { status: null, stdout: "", stderr: "", missing: true, error: "not found" };
    if (o.detached) return spawnDetached(cmd, args, this.env);
    return spawnOne(cmd, args, this.env, o.timeoutMs ?? this.timeoutMs);
  }
  /**
   * Runs a command and streams its stdout (see ExecOptions): for output of any size (the kernel
   * log) and for commands that may hang in the driver (xrt-smi validate).
   */
  async exec(cmd, args = [], o = {}) {
    const opts = { ...o, timeoutMs: o.timeoutMs ?? this.timeoutMs };
    const stub = this.commands[cmd];
    if (stub) return execStub(stub, args, opts);
    if (!this.spawn) return { status: null, stdout: "", stderr: "", missing: true, error: "not found", bytes: 0, truncated: false, stopped: false, timedOut: false };
    return execReal(cmd, args, this.env, opts);
  }
  /** A command on PATH, or the first existing fallback path under the root prefix; null when neither. */
  which(cmd, fallbacks = []) {
    for (const dir of (this.env.PATH ?? "").split(":").filter(Boolean)) {
      if (existsSync(join(dir, cmd))) return join(dir, cmd);
    }
    for (const f of fallbacks) if (this.exists(f)) return this.path(f);
    return null;
  }
  /** A command that run() can start: stubbed, or (when spawning) on PATH or at a fallback path. */
  has(cmd, fallbacks = []) {
    if (this.commands[cmd]) return true;
    return this.spawn && this.which(cmd, fallbacks) !== null;
  }
  home() {
    return this.env.HOME || homedir();
  }
  user() {
    if (this.env.USER) return this.env.USER;
    try {
      return userInfo().username;
    } catch {
      return "runner";
    }
  }
};

// src/agent/doctor.ts
import { accessSync, constants, existsSync as existsSync2, readdirSync as readdirSync2 } from "node:fs";
import { basename, dirname as dirname2, join as join4, resolve as resolve3 } from "node:path";

// src/agent/signatures.ts
var RELOAD = "sudo modprobe -r amdxdna && sudo modprobe amdxdna";
var powerCycleFix = (bdf) => `power-cycle the runner (a cold boot: mlir-air's CI finds a module reload does not bring the NPU back), or remove and rescan the NPU's PCI device: echo 1 | sudo tee /sys/bus/pci/devices/${bdf ?? "<bdf>"}/remove && echo 1 | sudo tee /sys/bus/pci/rescan`;
var RELOAD_FIX = `reload the driver: ${RELOAD}; if /dev/accel does not come back or the log then says "Access power failed", power-cycle the runner`;
var MGMT_FIX = `the driver dropped the NPU's management channel, so no hardware context can be created until the module is reloaded: ${RELOAD}; if /dev/accel does not come back, power-cycle the runner`;
var pciRescanFix = (bdf) => `remove and rescan the NPU's PCI device (a module reload does not bring it back after an IOMMU fault): echo 1 | sudo tee /sys/bus/pci/devices/${bdf ?? "<bdf>"}/remove && echo 1 | sudo tee /sys/bus/pci/rescan; else power-cycle the runner`;
var PROBE_DECIDES = `npu-block-gate runs the functional probe on it (agent doctor --functional by hand); if the probe fails: ${RELOAD}, else power-cycle the runner`;
var UNEXPLAINED_FIX = `the NPU does not run a command (userspace sees DRM_IOCTL_AMDXDNA_EXEC_CMD err=-5 or a timeout): ${RELOAD}; if /dev/accel does not come back or the log then says "Access power failed", power-cycle the runner`;
var firmwareFix = (file, err) => {
  const dir = file.endsWith("/") ? file : file.replace(/[^/]*$/, "");
  const what = file.endsWith("/") ? `an NPU firmware file in /lib/firmware/${file} (the driver tries npu.dev.sbin, npu_7.sbin, npu.sbin)` : `the NPU firmware /lib/firmware/${file}`;
  const why3 = err === "-2" ? "it is not there (error -2, ENOENT)" : `the kernel could not load it (error ${err ?? "?"})`;
  return `${why3}: install ${what} (the linux-firmware package's amdnpu/, or the firmware amd/xdna-driver's packages put in /lib/firmware/${dir}), then ${RELOAD}`;
};
var OPCODES = { 2: "create context", 3: "destroy context" };
var STATUSES = {
  33554433: "ERT self test failure",
  33554434: "ERT hash mismatch",
  33554435: "ERT not available",
  33554436: "ERT invalid parameter",
  33554437: "ERT suspend failure",
  33554438: "ERT busy",
  33554439: "ERT application active"
};
var SIGNATURES = [
  // kernel firmware_loader/main.c _request_firmware: dev_warn(device, "Direct firmware load for %s failed with error %d\n") (OOT's
  // request_firmware warns; the in-tree driver's firmware_request_nowarn does not);
  // then amdxdna "failed to request_firmware %s, ret %d": in-tree aie2_pci.c:596 (names the directory), OOT aie2_pci.c:515 (the file).
  {
    id: "firmware-missing",
    severity: "fail",
    re: /Direct firmware load for (\S+) failed with error (-?\d+)|failed to request_firmware (\S+), ret (-?\d+)/,
    what: (m) => `the NPU firmware ${m[1] ?? m[3]} could not be loaded (error ${m[2] ?? m[4]})`,
    fix: (m) => firmwareFix(m[1] ?? m[3], m[2] ?? m[4])
  },
  // OOT aie2_pci.c:88: XDNA_ERR(xdna, "Firmware %d.%d below minimum %d.%d", ...).
  {
    id: "firmware-too-old",
    severity: "fail",
    re: /Firmware (\d+)\.(\d+) below minimum (\d+)\.(\d+)/,
    what: (m) => `the NPU firmware (protocol ${m[1]}.${m[2]}) is older than this driver needs (${m[3]}.${m[4]})`,
    fix: () => `install the NPU firmware that matches this amdxdna (update linux-firmware's amdnpu/ or amd/xdna-driver's firmware package), then ${RELOAD}`
  },
  // A firmware that speaks another mailbox protocol than this driver: OOT before ae559d3e (#922) aie2_pci.c:95
  // aie2_check_protocol "Incompatible firmware protocol major %d minor %d", :105 "Firmware minor version smaller than
  // supported", and its caller :261 "Check protocol version failed". A power-cycle does not change the firmware file.
  {
    id: "firmware-protocol",
    severity: "fail",
    re: /Incompatible firmware protocol|Firmware minor version smaller than supported|Check protocol version failed/,
    what: () => "the NPU firmware speaks another mailbox protocol than this amdxdna (a firmware/driver mismatch)",
    fix: () => `install the NPU firmware that matches this amdxdna (linux-firmware's amdnpu/ for the in-tree driver, amd/xdna-driver's firmware package for the out-of-tree one), then ${RELOAD}; a power-cycle does not change the firmware`
  },
  // in-tree aie2_pci.c:570: XDNA_ERR(xdna, "Running under hypervisor not supported").
  {
    id: "hypervisor",
    severity: "host",
    re: /Running under hypervisor not supported/,
    what: () => "amdxdna refuses to drive the NPU inside a virtual machine",
    fix: () => "run the runner on the NPU host itself (bare metal): the in-tree amdxdna does not support a hypervisor"
  },
  // in-tree aie_smu.c:83 (aie_smu_init): drm_err(smu->ddev, "Access power failed, ret %d"); OOT aie2_smu.c:145 (aie2_smu_start).
  { id: "smu-power", severity: "fail", re: /Access power failed/, what: () => "the SMU could not power the NPU (Access power failed)", fix: (_m, bdf) => powerCycleFix(bdf) },
  // ---- A failed wake: the in-tree driver autosuspends the NPU after 5 s idle and resumes it through aie2_hw_resume ->
  // aie2_hw_start before every job (in-tree aie2_pci.c:1431-1433 .resume/.runtime_resume = aie2_hw_resume). A start that
  // fails at the SMU or the PSP leaves the NPU off; the lines a maintainer posted in amd/xdna-driver PR #1458, each from:
  // in-tree aie_smu.c:89 (aie_smu_init): drm_err(smu->ddev, "Power on failed, ret %d") -> "[drm] *ERROR* Power on failed, ret -110";
  // OOT aie2_smu.c:151 (aie2_smu_start) and aie4_smu.c:74: XDNA_ERR "Power on failed, ret %d"; both callers then log
  // in-tree aie2_pci.c:378 / OOT aie2_pci.c:382 (aie2_hw_start): XDNA_ERR "failed to init smu, ret %d".
  { id: "smu-power-on", severity: "fail", re: /Power on failed, ret|failed to init smu/, what: () => "the SMU could not power the NPU on (its wake failed)", fix: (_m, bdf) => powerCycleFix(bdf) },
  // in-tree aie_smu.c:58 (aie_smu_exec): drm_err(smu->ddev, "smu cmd %d timed out", reg_cmd); OOT aie_smu.c:39 (the same
  // text). (Its "smu cmd %d failed, 0x%x", :66 / :47, is an answer, not a hang: no signature; as an unexplained error
  // line it still has the functional probe run.)
  { id: "smu-cmd", severity: "fail", re: /smu cmd (\d+) timed out/, what: (m) => `an SMU command (${m[1]}) timed out (the NPU's power controller does not answer)`, fix: (_m, bdf) => powerCycleFix(bdf) },
  // in-tree aie_psp.c:70 and :87 (psp_exec, psp_start): drm_err(psp->ddev, "PSP is not ready, ret 0x%x"); OOT aie2_psp.c:43
  // dev_err(psp->dev, ...) and aie4_psp.c:38/:55 (the same text).
  { id: "psp-not-ready", severity: "fail", re: /PSP is not ready/, what: () => "the NPU's security processor (PSP) is not ready", fix: (_m, bdf) => powerCycleFix(bdf) },
  // in-tree aie2_pci.c:384 (aie2_hw_start): XDNA_ERR(xdna, "failed to start psp, ret %d"); OOT aie2_pci.c:388, aie4_pci.c:420.
  { id: "psp-start-failed", severity: "fail", re: /failed to start psp/, what: () => "the NPU firmware could not be started (failed to start psp)", fix: (_m, bdf) => powerCycleFix(bdf) },
  // in-tree aie2_pci.c:478 (aie2_hw_resume): XDNA_ERR(xdna, "Start hardware failed, %d") -> "aie2_hw_resume: Start hardware failed, -110";
  // then the job's ioctl: in-tree amdxdna_ctx.c:472/:513/:707 XDNA_ERR "Resume failed, ret %d" (amdxdna_pm_resume_get failed);
  // OOT amdxdna_pm.c:48 (amdxdna_pm_resume_get): XDNA_ERR "Resume failed: %d".
  { id: "resume-failed", severity: "fail", re: /Start hardware failed|\bResume failed(, ret|:) -?\d+/, what: () => "the NPU did not wake from runtime suspend (aie2_hw_resume failed)", fix: (_m, bdf) => powerCycleFix(bdf) },
  // in-tree aie2_pci.c:536 (aie2_hw_reset): "NPU power-cycle start failed: %d"; :547 "resume failed after NPU reset: %d".
  { id: "power-cycle-failed", severity: "fail", re: /NPU power-cycle start failed|resume failed after NPU reset/, what: () => "the driver's in-kernel NPU power-cycle failed", fix: (_m, bdf) => powerCycleFix(bdf) },
  // drivers/base/dd.c call_driver_probe: dev_err(dev, "probe with driver %s failed with error %d\n").
  // Before Linux 6.1 (drivers/base/dd.c really_probe): pr_warn("%s: probe of %s failed with error %d\n", drv->name, dev_name(dev), ret).
  { id: "probe-failed", severity: "fail", re: /probe with driver amdxdna failed|amdxdna: probe of \S+ failed with error/, what: () => "the driver could not probe the NPU", fix: (_m, bdf) => powerCycleFix(bdf) },
  // in-tree amdxdna_pci_drv.c:508 (amdxdna_probe): "Hardware init failed, ret %d"; OOT amdxdna_pci_drv.c:153.
  // Older out-of-tree drivers spelled it "hardware init failed" (lower case).
  { id: "hw-init-failed", severity: "fail", re: /[Hh]ardware init failed/, what: () => "NPU hardware init failed", fix: (_m, bdf) => powerCycleFix(bdf) },
  // in-tree aie2_pci.c:390 (aie2_hw_start): "firmware is not alive".
  // In-tree, aie2_get_mgmt_chann_info fails there too when aie_check_protocol (aie.c:106) finds no entry for the firmware's
  // protocol version: a mismatch the power-cycle does not fix, so the fix names both.
  { id: "fw-not-alive", severity: "fail", re: /firmware is not alive/, what: () => "the NPU firmware is not alive", fix: (_m, bdf) => `${powerCycleFix(bdf)}; if it is not alive after a cold boot either, the firmware may not match this amdxdna: install the NPU firmware that matches it (linux-firmware's amdnpu/), then ${RELOAD}` },
  // in-tree amdxdna_mailbox_helper.c:71 (xdna_send_msg_wait): "Wait for completion timeout", returns -ETIME; its caller
  // aie.c:72-73 (aie_send_mgmt_msg_wait) then destroys the management channel. OOT: amdxdna_mailbox_helper.c:57, aie2_message.c:61-65.
  { id: "mgmt-timeout", severity: "fail", re: /Wait for completion timeout/, what: () => "a management mailbox message timed out (the driver then drops the channel)", fix: () => MGMT_FIX },
  // OOT amdxdna_mailbox.c:959: MB_DBG(mb_chann, "Mailbox channel released type %d irq: %d") (dynamic debug); type 0 is
  // MB_CHANNEL_MGMT (amdxdna_mailbox.h:97): the management channel is gone.
  { id: "mgmt-channel-released", severity: "fail", re: /Mailbox channel released type 0\b/, what: () => "the NPU's management mailbox channel was released", fix: () => MGMT_FIX },
  // OOT aie2_ctx_runqueue.c:322 (part_ctx_start): XDNA_ERR(xdna, "%s connect failed, err %d", ctx->name, err).
  { id: "ctx-connect", severity: "fail", re: /part_ctx_start:.*connect failed/, what: () => "a hardware context could not connect", fix: () => RELOAD_FIX },
  // in-tree amdxdna_mailbox.c:407 "Channel in bad state, work aborted", :467 "Channel in bad state"; OOT :439, :664.
  { id: "channel-bad-state", severity: "fail", re: /Channel in bad state/, what: () => "a mailbox channel is in a bad state", fix: () => RELOAD_FIX },
  // in-tree amdxdna_mailbox.c:296 "Bad message ID 0x%x"; OOT :218 (the channel goes to a bad state after it).
  { id: "bad-message-id", severity: "fail", re: /Bad message ID/, what: () => "the mailbox got a bad message ID", fix: () => RELOAD_FIX },
  // in-tree aie2_pci.c:519 (aie2_hw_reset): XDNA_WARN "NPU reset skipped: last reset %d ms ago": the firmware is unhealthy
  // again within the reset window and the driver leaves it so.
  { id: "reset-skipped", severity: "fail", re: /NPU reset skipped: last reset/, what: () => "the firmware wedged again within the in-kernel reset window and was left so", fix: () => RELOAD_FIX },
  // drivers/iommu/amd/iommu.c amd_iommu_report_page_fault: pci_err(pdev, "Event logged [IO_PAGE_FAULT domain=0x%04x address=0x%llx
  // flags=0x%04x]"), or pr_err_ratelimited("Event logged [IO_PAGE_FAULT device=%04x:%02x:%02x.%x ...]") when no driver owns it.
  { id: "iommu-fault", severity: "warn", re: /IO_PAGE_FAULT/, what: () => "the NPU's DMA hit an unmapped address (IO_PAGE_FAULT)", fix: (_m, bdf) => pciRescanFix(bdf) },
  // in-tree aie.c:76 (aie_send_mgmt_msg_wait): "command opcode 0x%x failed, status 0x%x"; OOT aie2_message.c:69.
  {
    id: "fw-command-failed",
    severity: "warn",
    re: /command opcode 0x([0-9a-f]+) failed, status 0x([0-9a-f]+)/i,
    what: (m) => {
      const op = parseInt(m[1], 16);
      const st = parseInt(m[2], 16);
      return `the NPU firmware refused a command (${OPCODES[op] ?? `opcode 0x${m[1]}`}: ${STATUSES[st] ?? `status 0x${m[2]}`})`;
    },
    fix: () => PROBE_DECIDES
  },
  // in-tree aie2_ctx.c:841 (aie2_hwctx_init): "Alloc hw resource failed, ret %d"; OOT aie2_hwctx.c:124.
  { id: "hwctx-alloc-failed", severity: "warn", re: /Alloc hw resource failed/, what: () => "a hardware context got no NPU columns", fix: () => `if agent status shows another process holding /dev/accel, that one holds the columns; otherwise ${PROBE_DECIDES}` },
  // in-tree amdxdna_ctx.c:333 (amdxdna_drm_create_hwctx_ioctl): "Init hwctx failed, ret %d".
  { id: "hwctx-init-failed", severity: "warn", re: /Init hwctx failed/, what: () => "a hardware context could not be created", fix: () => PROBE_DECIDES },
  // in-tree aie2_pci.c:267 (aie2_xrs_load): "create context failed, ret %d"; OOT aie2_hwctx.c:31.
  { id: "context-create-failed", severity: "warn", re: /create context failed, ret/, what: () => "the firmware could not create a context", fix: () => PROBE_DECIDES },
  // in-tree aie2_tdr.c:59 and aie2_ctx.c:71 "TDR timeout detected", aie2_tdr.c:159 "Device isn't making progress";
  // OOT aie2_tdr.c:55-56 "Device isn't making progress... Count %d timeout %u dump_only %d". TDR = timeout detection and recovery.
  { id: "tdr", severity: "warn", re: /TDR timeout detected|Device isn't making progress/, what: () => "an NPU command timed out (the driver's TDR)", fix: () => PROBE_DECIDES },
  // in-tree aie2_ctx.c:269 (aie2_set_cmd_timeout) and OOT aie2_ctx.c:75: "Firmware timeout state capture:".
  { id: "fw-timeout-capture", severity: "warn", re: /Firmware timeout state capture/, what: () => "a command timed out in the firmware", fix: () => PROBE_DECIDES },
  // in-tree aie2_ctx.c:561-563 (aie2_sched_job_timedout): XDNA_WARN "NPU context restart rejected (ret %d) without fatal report - not power-cycling".
  { id: "ctx-restart-rejected", severity: "warn", re: /context restart rejected/, what: () => "the firmware rejected a context restart after a timeout", fix: () => PROBE_DECIDES },
  // in-tree amdxdna_pci_drv.c:131 (amdxdna_sva_init, from amdxdna_drm_open): "SVA bind device failed, ret %ld"; OOT amdxdna_drm.c:42.
  {
    id: "sva-bind-failed",
    severity: "host",
    re: /SVA bind device failed/,
    what: () => "the IOMMU gave a process no shared virtual addressing for the NPU",
    fix: () => "turn the IOMMU on (BIOS: IOMMU / AMD-Vi enabled) and boot without amd_iommu=off: amdxdna binds every process that opens the NPU through IOMMU SVA"
  },
  // in-tree amdxdna_pci_drv.c:183: XDNA_WARN "PASID not available for pid %d" (the driver falls back to its carveout).
  {
    id: "pasid-unavailable",
    severity: "host",
    re: /PASID not available for pid/,
    what: () => "the IOMMU had no PASID for a process (the driver fell back to its carveout memory)",
    fix: () => "turn the IOMMU on with PASID support (BIOS: IOMMU / AMD-Vi enabled) so every process gets one"
  }
];
var SIGNATURE_IDS = SIGNATURES.map((s) => s.id);
function matchSignature(line, bdf = null) {
  for (const s of SIGNATURES) {
    const m = s.re.exec(line);
    if (m) return { id: s.id, severity: s.severity, what: s.what(m), fix: s.fix(m, bdf) };
  }
  return null;
}
function isDriverLoad(line) {
  return /\[drm\] Initialized amdxdna/i.test(line);
}
function isRecovery(line) {
  return /aie2_hw_reset: NPU firmware unhealthy: power-cycling NPU/i.test(line);
}
function isErrorLine(line) {
  if (isDriverLoad(line) || isRecovery(line)) return false;
  return /\*ERROR\*|\b(fail(ed|s|ure)?|error|timed out|timeout|not ready|unhealthy|invalid|bad state)\b/i.test(line);
}

// src/agent/parse.ts
var na = (v) => !v || /^(n\/a|unknown)$/i.test(v.trim()) ? null : v.trim();
function memlockError(text) {
  for (const line of text.split(/\r?\n/)) {
    if (/mmap\(.*\)\s*failed\s*\(err=-?11\)|Resource temporarily unavailable|RLIMIT_MEMLOCK/i.test(line)) return line.trim();
  }
  return null;
}
function parseXrtSmi(text) {
  const info = { xrt: null, amdxdna: null, amdxdnaHash: null, inTree: false, firmware: null, devices: [], layout: null, memlockError: memlockError(text) };
  let section = "";
  let release = null;
  let driverKey = null;
  let tableColumns = 0;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/\s+$/, "");
    if (/^\S/.test(line) && !/^[-|[]/.test(line) && !line.includes(":")) {
      section = line.trim();
      continue;
    }
    if (/^(Device\(s\) Present|Devices present)$/i.test(section)) {
      const piped = /^\|\s*\[([0-9a-fA-F:.]+)\]\s*\|([^|]*)\|/.exec(line);
      const colon = /^\s*\[([0-9a-fA-F:.]+)\]\s+:\s+(\S.*)$/.exec(line);
      if (/^\|BDF/.test(line)) tableColumns = line.split("|").length - 2;
      if (piped) info.devices.push({ bdf: piped[1], name: piped[2].trim() });
      else if (colon) info.devices.push({ bdf: colon[1], name: colon[2].trim() });
      continue;
    }
    const kv = /^\s+([^:]+?)\s*:\s?(.*)$/.exec(line);
    if (!kv) continue;
    const key = kv[1].trim();
    const value2 = kv[2].trim();
    if (section === "System Configuration" && key === "Release") release = value2;
    if (section !== "XRT") continue;
    if (key === "Version") info.xrt = na(value2);
    else if (/^amdxdna( version)?$/i.test(key)) {
      driverKey = key;
      const [v, h] = value2.split(/,\s*/);
      info.amdxdna = na(v);
      info.amdxdnaHash = na(h);
    } else if (/^(NPU )?Firmware Version$/i.test(key)) info.firmware = na(value2);
  }
  if (driverKey) {
    info.layout = driverKey === "AMDXDNA" ? "2.17" : /version$/i.test(driverKey) && (info.amdxdnaHash || tableColumns > 2) ? "current" : "2.19";
    if (tableColumns > 2) info.layout = "current";
    info.inTree = !!release && info.amdxdna === release || info.amdxdna === "0.1" && !info.amdxdnaHash;
  }
  return info;
}
function parseXrtValidate(text) {
  const v = { bdf: null, platform: null, powerMode: null, tests: [], result: null };
  let cur = null;
  let tag = "";
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/\s+$/, "");
    let m;
    if (m = /^Validate Device\s*:\s*\[([^\]]+)\]/.exec(line)) {
      v.bdf = m[1];
      continue;
    }
    if (m = /^Test \d+ \[[^\]]*\]\s*:\s*(\S+)/.exec(line)) {
      cur = { name: m[1], status: "", details: [], errors: [] };
      v.tests.push(cur);
      tag = "";
      continue;
    }
    if (m = /^Validation (completed|failed)(, but with warnings)?/.exec(line)) {
      v.result = m[1] === "failed" ? "failed" : m[2] ? "warning" : "passed";
      continue;
    }
    if ((m = /^\s{4}(\S[^:]*?)?\s*:\s(.*)$/.exec(line)) || (m = /^\s{28}()(\S.*)$/.exec(line))) {
      const continued = !(m[1] ?? "").trim();
      const key = (m[1] ?? "").trim() || tag;
      const value2 = m[2].trim();
      if (key) tag = key;
      if (cur && continued && key === "Error(s)" && cur.errors.length) {
        cur.errors[cur.errors.length - 1] += ` ${value2}`;
        continue;
      }
      if (!cur) {
        if (key === "Platform") v.platform = value2;
        else if (key === "Power Mode" || key === "Performance Mode") v.powerMode = value2;
        continue;
      }
      if (key === "Test Status") cur.status = value2.replace(/^\[|\]$/g, "");
      else if (key === "Details") cur.details.push(value2);
      else if (key === "Error(s)") cur.errors.push(value2);
    }
  }
  return v;
}
var firstLine = (text, re) => text.split(/\r?\n/).map((l) => l.trim()).find((l) => re.test(l)) ?? null;
function classifyValidate(text, exitStatus) {
  const v = parseXrtValidate(text);
  const failed = v.tests.filter((t) => /^FAILED/.test(t.status));
  const passed2 = v.tests.filter((t) => /^PASSED/.test(t.status));
  if (exitStatus === 0 && passed2.length && !failed.length && v.result !== "failed") return { kind: "pass", line: null };
  const mem = memlockError(text);
  if (mem) return { kind: "memlock", line: mem };
  const perm = firstLine(text, /\(err=-?13\)|Permission denied/i);
  if (perm) return { kind: "permissions", line: perm, denied: /SET_STATE/.test(perm) ? "set-state" : /Open \S+ failed|\/dev\/accel/.test(perm) ? "node" : null };
  const install = firstLine(text, /No archive (found|provided)|\bnot available\b|Invalid test name|No devices? (were )?found|Device not found|Specified device .*not found|cannot open shared object file|command not found/i);
  if (install) return { kind: "xrt-install", line: install };
  if (exitStatus === 126 || exitStatus === 127 || exitStatus === 134 || exitStatus === 139) {
    const what = exitStatus === 139 ? "crashed (exit 139, SIGSEGV)" : exitStatus === 134 ? "aborted (exit 134, SIGABRT)" : `could not run (exit ${exitStatus})`;
    return { kind: "xrt-install", line: `xrt-smi ${what}${text.trim() ? `: ${text.trim().split(/\r?\n/).pop()}` : ""}` };
  }
  const errors = v.tests.flatMap((t) => t.errors);
  if (exitStatus === 0 || !failed.length && !errors.length && v.result !== "failed" && /^Validation completed/m.test(text)) {
    return { kind: "xrt-install", line: v.tests.length ? `every test was skipped (${v.tests.map((t) => `${t.name}: ${t.status || "?"}`).join(", ")})` : "xrt-smi validate ran no test" };
  }
  return { kind: "device", line: errors[0] ?? firstLine(text, /ERROR|error|failed/) };
}
function parsePowerMode(text) {
  const m = /^\s*Power Mode\s*:\s*(\S[^\n]*?)\s*$/m.exec(text);
  return m ? m[1] : null;
}
var shortBdf = (bdf) => bdf.replace(/^[0-9a-f]{4}:/i, "").toLowerCase();
function isNpuLine(line, bdf) {
  if (/amdxdna|aie2_|xdna_mailbox/i.test(line)) return true;
  if (!bdf) return false;
  const l = line.toLowerCase();
  return l.includes(bdf.toLowerCase()) || l.includes(`device=${shortBdf(bdf)}`);
}
function classifyKernelLine(line, bdf) {
  if (!isNpuLine(line, bdf)) return null;
  return matchSignature(line, bdf ?? null);
}
function lineTime(line) {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:[.,](\d+))?(Z|[+-]\d{2}:?\d{2})?\s/.exec(line);
  if (!m) return null;
  const frac = m[2] ? `.${m[2].slice(0, 3).padEnd(3, "0")}` : "";
  const tz = !m[3] ? "Z" : m[3] === "Z" ? "Z" : m[3].includes(":") ? m[3] : `${m[3].slice(0, 3)}:${m[3].slice(3)}`;
  const d = /* @__PURE__ */ new Date(`${m[1]}${frac}${tz}`);
  return Number.isNaN(d.getTime()) ? null : d;
}
function scanKernelLog(text, o = {}) {
  const lines = text.split(/\r?\n/).filter((l) => isNpuLine(l, o.bdf));
  let start = 0;
  let reset = null;
  const seen = o.byPosition && o.clearedLine ? lines.map((l) => l.trim()).lastIndexOf(o.clearedLine.trim()) : -1;
  lines.forEach((l, i) => {
    if (isDriverLoad(l)) {
      start = i + 1;
      reset = { kind: "load", line: l.trim() };
    } else if (isRecovery(l)) {
      start = i + 1;
      reset = { kind: "recovery", line: l.trim() };
    } else if (o.byPosition) {
      const before = seen >= 0 ? i <= seen : !o.clearedLine && !lineTime(l) && o.clearedLines != null && i < o.clearedLines;
      if (before && i + 1 > start) {
        start = i + 1;
        reset = { kind: "functional", line: null };
      }
    } else if (o.clearedAt || o.clearedLines) {
      const t = lineTime(l);
      const before = t && o.clearedAt ? t.getTime() <= o.clearedAt.getTime() : !t && o.clearedLines != null && i < o.clearedLines;
      if (before && i + 1 > start) {
        start = i + 1;
        reset = { kind: "functional", line: null };
      }
    }
  });
  const byId = /* @__PURE__ */ new Map();
  let cleared = 0;
  let unexplained = null;
  lines.forEach((l, i) => {
    const w = classifyKernelLine(l, o.bdf);
    if (!w) {
      if (i >= start && isErrorLine(l)) unexplained = { count: (unexplained?.count ?? 0) + 1, last: l.trim() };
      return;
    }
    if (i < start) {
      cleared++;
      return;
    }
    const prev = byId.get(w.id);
    byId.set(w.id, { ...w, count: (prev?.count ?? 0) + 1, last: l.trim() });
  });
  const found = [...byId.values()].sort((a, b) => SIGNATURE_IDS.indexOf(a.id) - SIGNATURE_IDS.indexOf(b.id));
  return { lines: lines.length, loaded: lines.some(isDriverLoad), reset, found, cleared, unexplained };
}
function blindJournal(stdout, stderr) {
  const m = /No journal files were (found|opened)[^\n]*|You are currently not seeing messages[^\n]*|read kernel buffer failed[^\n]*|Operation not permitted[^\n]*/i.exec(stderr) ?? /^(No journal files were (found|opened)[^\n]*|Hint: You are currently not seeing messages[^\n]*)$/im.exec(stdout);
  if (m) return m[0].trim();
  const real = stdout.split(/\r?\n/).filter((l) => l.trim() && !/^-- .* --$/.test(l.trim()) && !/^Hint:|^\s{6}(Users in groups|Pass -q)/.test(l));
  if (real.length) return null;
  const partial = /[^\n]*journal files were not opened due to insufficient permissions[^\n]*/i.exec(stderr);
  if (partial) return partial[0].trim();
  return stdout.includes("-- No entries --") ? "no kernel messages (-- No entries --)" : "no kernel messages at all";
}
function parseMemlockLimits(limits) {
  const m = /^Max locked memory\s+(\S+)\s+(\S+)/m.exec(limits);
  if (!m) return null;
  const v = (s) => s === "unlimited" ? "unlimited" : Number(s);
  return { soft: v(m[1]), hard: v(m[2]) };
}
function parseProcLocks(text) {
  const out = [];
  for (const line of text.split(/\r?\n/)) {
    const parts = line.trim().split(/\s+/);
    const blocked = parts[1] === "->";
    const p = blocked ? [parts[0], ...parts.slice(2)] : parts;
    if (p.length < 6) continue;
    const pid = Number(p[4]);
    const f = p[5].split(":");
    if (f.length !== 3 || !/^[0-9a-f]+$/i.test(f[0]) || !/^[0-9a-f]+$/i.test(f[1])) continue;
    const inode = Number(f[2]);
    if (!Number.isInteger(pid) || !Number.isInteger(inode)) continue;
    out.push({ kind: p[1], mode: p[2], access: p[3], pid, major: parseInt(f[0], 16), minor: parseInt(f[1], 16), inode, blocked });
  }
  return out;
}
function formatBytes(n) {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v >= 100 ? v.toFixed(0) : v.toFixed(1)} ${units[u]}`;
}
function parseSize(s) {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$/i.exec(s);
  if (!m) return null;
  const mult = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 }[m[2].toLowerCase()];
  const n = Number(m[1]) * mult;
  return Number.isFinite(n) ? Math.floor(n) : null;
}
function compareVersions(a, b) {
  const pa = a.split(/[^0-9]+/).filter(Boolean).map(Number);
  const pb = b.split(/[^0-9]+/).filter(Boolean).map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d) return d;
  }
  return 0;
}

// src/agent/lock.ts
var DEFAULT_NPU_LOCK = NPU_LOCK.path;
var DEFAULT_WAIT_SECONDS = NPU_LOCK.timeout_seconds;
var PROGRESS_EVERY_MS = NPU_LOCK.progress_seconds * 1e3;
var POLL_MS = 1e3;
function npuLockPath(env, explicit) {
  const p = explicit || env[NPU_LOCK.env] || DEFAULT_NPU_LOCK;
  return p.trim().toLowerCase() === "none" ? null : p;
}
function lockState(m, path = npuLockPath(m.env)) {
  if (!path) return { path, holder: null, waiters: 0, exists: false };
  const id = m.fileId(path);
  if (id === null) return { path, holder: null, waiters: 0, exists: false };
  const locks = parseProcLocks(m.read("/proc/locks") ?? "").filter((l) => l.inode === id.ino && l.major === id.major && l.minor === id.minor);
  const h = locks.find((l) => !l.blocked);
  const holder = h ? { pid: h.pid, cmdline: (m.readBytes(`/proc/${h.pid}/cmdline`)?.toString("utf8") ?? "").replace(/\0/g, " ").trim().slice(0, 120) } : null;
  return { path, holder, waiters: locks.filter((l) => l.blocked).length, exists: true };
}
function describeHolder(s) {
  if (!s.holder) return "free";
  return `held by pid ${s.holder.pid}${s.holder.cmdline ? ` (${s.holder.cmdline})` : ""}${s.waiters ? `, ${s.waiters} waiting` : ""}`;
}
function renderLockStatus(s) {
  if (!s.path) return "NPU lock off (NPU_BLOCK_GATE_NPU_LOCK=none)\n";
  const who = s.holder ? `held by pid ${s.holder.pid}${s.holder.cmdline ? ` (${s.holder.cmdline})` : ""}` : `free${s.exists ? "" : " (no lock file yet)"}`;
  return `${s.path}: ${who}; ${s.waiters} waiting
`;
}
var secs = (ms) => String(Math.round(ms) / 1e3);
async function waitLock(m, path, timeoutMs, progress) {
  if (!lockState(m, path).exists) return { path, free: true, waited_s: 0, method: "none", holder: null };
  let waited = 0;
  const start = m.now().getTime();
  const done = (free, method) => ({
    path,
    free,
    waited_s: Math.round(waited / 100) / 10,
    method,
    holder: free ? null : describeHolder(lockState(m, path))
  });
  const tell = () => progress(`waiting for ${path}: ${describeHolder(lockState(m, path))} (${secs(waited)}s of ${secs(timeoutMs)}s)`);
  for (; ; ) {
    const slice = Math.min(PROGRESS_EVERY_MS - waited % PROGRESS_EVERY_MS, timeoutMs - waited);
    const r = m.run("flock", ["-w", secs(slice), m.path(path), "true"], slice + 1e4);
    if (r.status === 0) {
      waited = Math.max(waited, Math.min(timeoutMs, m.now().getTime() - start));
      return done(true, "flock");
    }
    if (r.status !== 1) break;
    waited += slice;
    if (waited >= timeoutMs) return done(false, "flock");
    tell();
  }
  let next = (Math.floor(waited / PROGRESS_EVERY_MS) + 1) * PROGRESS_EVERY_MS;
  for (; ; ) {
    if (!lockState(m, path).holder) return done(true, "poll");
    if (waited >= timeoutMs) return done(false, "poll");
    const step = Math.min(POLL_MS, timeoutMs - waited);
    await m.sleep(step);
    waited += step;
    if (waited >= next && waited < timeoutMs) {
      tell();
      next += PROGRESS_EVERY_MS;
    }
  }
}

// src/agent/state.ts
import { mkdirSync, readFileSync as readFileSync2, appendFileSync } from "node:fs";
import { dirname, join as join2, resolve as resolve2 } from "node:path";
var defaultStateDir = (m) => resolve2(m.env.NPU_BLOCK_GATE_STATE_DIR || join2(m.home(), ".npu-block-gate", "state"));
var STATE_FILES = {
  functional: "functional.json",
  job: "job.json",
  lastJob: "last-job.json",
  drain: "drain.json",
  jobs: "jobs.ndjson",
  /** jobs.ndjson's previous generation (rotated by size and age). */
  jobsOld: "jobs.ndjson.1",
  counters: "counters.json",
  textfile: "npu_block_gate.prom",
  /** The numpy check's kept answers, per interpreter (probe/answers.ts): a job need not start Python. */
  python: "python-answers.json"
};
function readJson(path) {
  try {
    return JSON.parse(readFileSync2(path, "utf8"));
  } catch {
    return null;
  }
}
function writeAtomic2(path, text, mode = 420, durable = true) {
  writeAtomic(path, text, { mode, follow: false, durable });
}
var writeJson = (path, value2, o = {}) => writeAtomic2(path, JSON.stringify(value2, null, 2) + "\n", 420, o.durable ?? true);
function appendLine(path, value2) {
  mkdirSync(dirname(path), { recursive: true });
  appendFileSync(path, JSON.stringify(value2) + "\n");
}
var bootId = (m) => m.read("/proc/sys/kernel/random/boot_id")?.trim() || null;
var JOB_OUTCOMES = ["ok", "refused", "device_failed"];

// src/agent/checks.ts
var mk = (scope) => ({
  ok: (id, detail) => ({ id, status: "ok", scope, detail, fix: null }),
  warn: (id, detail, fix) => ({ id, status: "warn", scope, detail, fix }),
  fail: (id, detail, fix) => ({ id, status: "fail", scope, detail, fix }),
  unknown: (id, detail, fix) => ({ id, status: "unknown", scope, detail, fix })
});
var dev = mk("device");
var host = mk("host");
var deviceFailures = (checks) => checks.filter((c) => c.scope === "device" && c.status === "fail");
function summarize(checks) {
  const s = { ok: 0, warn: 0, fail: 0, unknown: 0 };
  for (const c of checks) s[c.status]++;
  return s;
}

// src/agent/memlock.ts
var MEMLOCK_NEEDED = 64 * 1024 ** 2;
function memlockLimits(m) {
  const text = m.read("/proc/self/limits");
  return text === null ? null : parseMemlockLimits(text);
}
function systemdLimit(v) {
  const t = v?.trim();
  if (!t) return null;
  if (t === "infinity") return "unlimited";
  return /^\d+$/.test(t) ? Number(t) : null;
}
function serviceLimits(m, service) {
  const r = m.run("systemctl", ["show", "-p", "LimitMEMLOCK", "-p", "LimitMEMLOCKSoft", service], 15e3);
  if (r.status !== 0) return null;
  const kv = Object.fromEntries(r.stdout.split("\n").map((l) => l.split("=")).filter((p) => p.length === 2).map(([k, v]) => [k.trim(), v]));
  const hard = systemdLimit(kv.LimitMEMLOCK);
  const soft = systemdLimit(kv.LimitMEMLOCKSoft) ?? hard;
  return hard !== null && soft !== null ? { soft, hard } : null;
}
var big = (v, n = MEMLOCK_NEEDED) => v === "unlimited" || v >= n;
var lowMemlock = (l) => !!l && !big(l.soft);
var fmtLimit = (v) => v === "unlimited" ? "unlimited" : formatBytes(v);
var fmtLimits = (l) => `soft ${fmtLimit(l.soft)}, hard ${fmtLimit(l.hard)}`;
function memlockFix(l, service) {
  const svc = service ?? "<the runner service>";
  if (l && !big(l.hard)) {
    return `the hard limit (${fmtLimit(l.hard)}) caps every job and this tool: sudo systemctl edit ${svc} with [Service] LimitMEMLOCK=infinity, then restart it (or sudo prlimit -lunlimited --pid $$ in each job, as mlir-air's CI does)`;
  }
  return `raise it before NPU work: ulimit -l unlimited in the job (the hard limit allows it, no sudo), or sudo prlimit -lunlimited --pid $$ as mlir-air's CI does; for every job: LimitMEMLOCK=infinity in ${svc}`;
}
var MEMLOCK_FIRST = (limits, service) => `memlock first: ${memlockFix(limits, service)}`;
function checkMemlock(l, service) {
  if (!l) return host.warn("memlock", 'cannot read "Max locked memory" from /proc/self/limits', memlockFix(null, service));
  const detail = `Max locked memory: ${fmtLimits(l)}`;
  if (l.soft === "unlimited") return host.ok("memlock", detail);
  return host.warn("memlock", `${detail} (the NPU driver maps ~64 MiB locked; XRT fails with mmap err=-11 under it)`, memlockFix(l, service));
}

// src/agent/klog.ts
var KERNEL_LOG_MAX_BYTES = 64 * 1024 ** 2;
var JOURNAL_FIX = "let the runner user read the kernel log: sudo usermod -aG systemd-journal <runner user> (then restart the runner service), or allow dmesg: sudo sysctl -w kernel.dmesg_restrict=0";
var HEAD_BYTES = 64 * 1024;
var bare = (why3) => oneLine(why3).replace(/^(dmesg|journalctl):\s*/, "");
async function readOne(m, cmd, args, o, newestFirst) {
  const bound = o.maxBytes ?? KERNEL_LOG_MAX_BYTES;
  const kept = [];
  let head = "";
  let stop = null;
  const since = o.since?.getTime() ?? null;
  const r = await m.exec(cmd, args, {
    maxBytes: bound,
    timeoutMs: 6e4,
    onLine: (line) => {
      if (head.length < HEAD_BYTES) head += line + "\n";
      if (newestFirst && since !== null) {
        const t = lineTime(line);
        if (t && t.getTime() <= since) {
          stop = "since";
          return false;
        }
      }
      if (!isNpuLine(line, o.bdf)) return true;
      kept.push(line);
      if (newestFirst && isDriverLoad(line)) {
        stop = "load";
        return false;
      }
      if (newestFirst && isRecovery(line)) {
        stop = "recovery";
        return false;
      }
      return true;
    }
  });
  const why3 = r.missing ? "not found" : r.timedOut ? r.error ?? "timed out" : r.status !== 0 && !r.stopped && !r.truncated ? r.error ?? (r.stderr.trim().split("\n").pop() || `exit ${r.status}`) : blindJournal(head, r.stderr);
  return { why: why3, r, kept, stop, bound };
}
async function readKernelLog(m, o) {
  const readAt = m.now().toISOString();
  const since = o.sinceHours ? ["--since", `-${o.sinceHours}h`] : [];
  const j = await readOne(m, "journalctl", ["-k", "-b", "0", "-r", ...since, "--no-pager", "-o", "short-iso-precise"], o, true);
  if (!j.why) {
    return { source: `journalctl -k -b 0${o.sinceHours ? ` (last ${o.sinceHours}h)` : ""}`, lines: j.kept.reverse(), bytes: j.r.bytes, bound: j.bound, truncated: j.r.truncated, stop: j.stop, newestFirst: true, readAt };
  }
  let d = await readOne(m, "dmesg", ["--time-format", "iso"], o, false);
  if (d.r.status !== 0 && /unrecognized option|invalid option|unknown time format/i.test(d.r.stderr)) d = await readOne(m, "dmesg", [], o, false);
  if (!d.why) return { source: "dmesg", lines: d.kept, bytes: d.r.bytes, bound: d.bound, truncated: d.r.truncated, stop: null, newestFirst: false, readAt };
  return { error: `kernel log unreadable: journalctl -k: ${bare(j.why)}; dmesg: ${bare(d.why)}` };
}
function readNote(log) {
  return `${formatBytes(log.bytes)} read${log.newestFirst ? " newest first" : ""}, bound ${formatBytes(log.bound)}`;
}
function checkKernelLog(log, o) {
  if ("error" in log) return { check: dev.unknown("kernel-log", `${log.error}: no wedge can be seen, so none is ruled out`, JOURNAL_FIX), host: null, scan: null };
  const f = o.cleared;
  const scan = scanKernelLog(log.lines.join("\n"), {
    bdf: o.bdf,
    clearedAt: f ? new Date(f.at) : null,
    clearedLines: f?.npu_lines ?? null,
    clearedLine: f?.npu_last ?? null,
    byPosition: !log.newestFirst
  });
  if (log.stop === "since" && !scan.reset) scan.reset = { kind: "functional", line: null };
  const note = readNote(log);
  const resetNote = scan.cleared ? `; ${scan.cleared} older signature line(s) cleared by ${scan.reset?.kind === "recovery" ? "an in-kernel NPU reset (aie2_hw_reset)" : scan.reset?.kind === "functional" ? `a passing functional probe (${f.at})` : "a driver load"}` : "";
  const device = scan.found.filter((w) => w.severity !== "host");
  const hosted = scan.found.filter((w) => w.severity === "host");
  const hostCheck = hosted.length ? host.warn("kernel-log-host", `${log.source}: ${hosted.map((w) => `${w.what} x${w.count}`).join("; ")}; last: ${hosted[0].last}`, hosted.map((w) => w.fix).join("; ")) : null;
  if (device.length) {
    const worst = device[0];
    const detail = `${log.source}: ${device.map((w) => `${w.what} x${w.count}`).join("; ")}; last: ${worst.last}${resetNote} (${note})`;
    return { check: worst.severity === "fail" ? dev.fail("kernel-log", detail, worst.fix) : dev.warn("kernel-log", detail, worst.fix), host: hostCheck, scan };
  }
  if (scan.unexplained) {
    const u = scan.unexplained;
    return {
      check: dev.warn("kernel-log", `${log.source}: ${u.count} amdxdna error line(s) that no signature explains${scan.reset ? " since the last reset point" : " this boot"}; last: ${u.last} (${note})`, PROBE_DECIDES),
      host: hostCheck,
      scan
    };
  }
  const covered = !!f && new Date(f.at).getTime() >= new Date(log.readAt).getTime();
  if (log.truncated && !scan.reset && !covered) {
    return {
      check: dev.unknown(
        "kernel-log",
        `${log.source}: no wedge signatures in the newest ${formatBytes(log.bytes)} of this boot's log (the bound), but no driver load, in-kernel reset or passing functional probe in it either: the older part was not read, so it cannot vouch for the NPU`,
        "npu-block-gate agent doctor --functional tests the NPU itself (the hooks run it on their own); a passing probe becomes the point the log is read back to"
      ),
      host: hostCheck,
      scan
    };
  }
  if (o.node && !scan.loaded && log.stop === null) {
    if (f) return { check: dev.ok("kernel-log", `${log.source}: no wedge signatures in ${scan.lines} NPU line(s); no driver-load line this boot, but the functional probe passed at ${f.at} (${note})`), host: hostCheck, scan };
    return {
      check: dev.unknown(
        "kernel-log",
        `${log.source}: ${scan.lines} NPU line(s) and no amdxdna driver-load line ("[drm] Initialized amdxdna_accel_driver") this boot: the log does not reach back to the driver load, so it cannot vouch for the NPU (${note})`,
        "npu-block-gate agent doctor --functional tests the NPU itself; make the journal keep this boot (Storage=persistent, a larger SystemMaxUse)"
      ),
      host: hostCheck,
      scan
    };
  }
  const since = !scan.reset ? "this boot" : `since the ${scan.reset.kind === "recovery" ? "in-kernel reset" : scan.reset.kind === "functional" ? `functional pass (${f?.at ?? "?"})` : "driver load"}`;
  return { check: dev.ok("kernel-log", `${log.source}: no wedge signatures in ${scan.lines} NPU line(s) ${since}${resetNote} (${note})`), host: hostCheck, scan };
}
function resetAfter(log, t) {
  if ("error" in log) return false;
  return log.lines.some((l) => (isDriverLoad(l) || isRecovery(l)) && (lineTime(l)?.getTime() ?? 0) > t.getTime());
}

// src/agent/functional.ts
import { join as join3 } from "node:path";
var FUNCTIONAL_MAX_AGE_S = 600;
var FUNCTIONAL_TIMEOUT_S = 30;
var XRT_SMI_FALLBACK = "/opt/xilinx/xrt/bin/xrt-smi";
var functionalPath = (stateDir) => join3(stateDir, STATE_FILES.functional);
function lastFunctional(stateDir) {
  return readJson(functionalPath(stateDir));
}
var defaultFunctionalTest = (xrt) => !xrt || compareVersions(xrt, "2.18") >= 0 ? "latency" : "verify";
function lastPass(rec, boot) {
  if (!rec || !rec.boot_id || rec.boot_id !== boot) return null;
  if (rec.last_ok) return rec.last_ok;
  return rec.status === "ok" ? { at: rec.at, npu_lines: rec.npu_lines, npu_last: rec.npu_last ?? null } : null;
}
function probeReason(o) {
  if (o.kernel.status === "warn" || o.kernel.status === "fail") return `the kernel log shows a ${o.kernel.status === "fail" ? "failure" : "warning"} signature since the last good probe`;
  const age = o.lastPass ? (o.now.getTime() - new Date(o.lastPass.at).getTime()) / 1e3 : NaN;
  const fresh = age >= 0 && age <= o.intervalS;
  if (o.kernel.status === "unknown" && !(o.recentPassVouches && fresh)) return "the kernel log cannot vouch for the NPU";
  if (!o.lastPass) return "no functional probe has passed this boot";
  if (!fresh) return `the last good probe is ${Math.round(age)}s old (interval ${o.intervalS}s)`;
  return null;
}
function reusable(rec, o) {
  if (!rec || rec.status === "ok" || !rec.boot_id || rec.boot_id !== o.boot || o.resetSince) return false;
  const age = (o.now.getTime() - new Date(rec.at).getTime()) / 1e3;
  return age >= 0 && age < o.intervalS;
}
var limitArg = (v) => v === "unlimited" ? "unlimited" : String(v);
var tail = (text, n) => text.split(/\r?\n/).map((l) => l.trim()).filter(Boolean).slice(-n);
function hostFix(f, o) {
  if (f.kind === "memlock") return memlockFix(o.limits, o.service);
  if (f.kind === "permissions") {
    if (f.denied === "set-state") return `XRT ${o.xrt ?? "before 2.19.194"}'s xrt-smi validate first sets the NPU's power mode, which only root may: upgrade XRT to 2.19.194 or later, whose validate keeps the current mode without root (Xilinx/XRT PR #8791)`;
    if (f.denied === "node") return `${o.user} cannot open /dev/accel/accel0: add it to the node's group (sudo usermod -aG render ${o.user}), then restart the runner service`;
    return `run xrt-smi validate --run ${o.test} as ${o.user} to see what it may not open; /dev/accel/accel0 must be readable and writable by ${o.user}'s groups`;
  }
  const line = f.line ?? "";
  const xrt = `XRT${o.xrt ? ` ${o.xrt}` : ""}`;
  if (/No archive/i.test(line)) return `the XRT install lacks xrt-smi's validate archive (amdxdna/bins/xrt_smi_*.a, found through XRT's platform path): reinstall the amdxdna plugin package that matches ${xrt} (xrt_plugin-amdxdna), which ships it`;
  if (/not available/i.test(line)) return `the XRT install lacks the file the test needs (${line}): reinstall the amdxdna plugin package that matches ${xrt} (xrt_plugin-amdxdna)`;
  if (/Invalid test name/i.test(line)) return `this XRT has no "${o.test}" test: pass --functional-test with one that xrt-smi validate --help lists`;
  if (/xrt-smi (crashed|aborted|could not run)/.test(line)) return `${line}: the XRT install is broken, not the NPU (reinstall XRT and the amdxdna plugin package that matches ${xrt}; run xrt-smi examine by hand to see it)`;
  if (/No devices? (were )?found|Device not found|Specified device .*not found/i.test(line)) return `XRT sees no NPU although sysfs has one: its amdxdna plugin (libxrt_driver_xdna.so, the xrt_plugin-amdxdna package) is missing or does not match ${xrt}: reinstall it`;
  return `run xrt-smi validate --run ${o.test} --verbose to see why (XRT prints nothing for a skipped test): usually the test's xclbin or archive is missing from the XRT install; reinstall the amdxdna plugin package that matches XRT`;
}
var HOST_WHAT = { memlock: "the memlock limit", permissions: "a permission", "xrt-install": "the XRT install" };
async function runFunctional(m, c) {
  const test = c.test ?? defaultFunctionalTest(c.xrt);
  const cmd = `xrt-smi validate --run ${test}`;
  const switchTo = c.runAs && m.uid === 0 && c.runAs.uid !== 0 ? c.runAs : null;
  let user = m.user();
  const now = m.now();
  const save = (r2) => {
    const rec = { at: now.toISOString(), test, boot_id: bootId(m), npu_lines: c.npuLines, user, memlock: c.limits, ...r2 };
    try {
      writeJson(functionalPath(c.stateDir), rec);
    } catch {
    }
    return { checks: checksFromRecord(rec), record: rec };
  };
  const base = { power_mode: null, host: null, last_ok: c.lastPass };
  if (!m.has("xrt-smi", [XRT_SMI_FALLBACK])) {
    return save({ ...base, status: "unknown", finding: "xrt-install", detail: "xrt-smi not found: the functional probe needs XRT", fix: "source /opt/xilinx/xrt/setup.sh (or install XRT) so xrt-smi is on PATH" });
  }
  const exe = m.which("xrt-smi", [XRT_SMI_FALLBACK]) ?? "xrt-smi";
  const notes = [];
  let asUser = [];
  if (switchTo) {
    if (m.has("setpriv", ["/usr/bin/setpriv", "/bin/setpriv"])) {
      asUser = ["setpriv", "--reuid", String(switchTo.uid), "--regid", String(switchTo.gid), "--init-groups", "--"];
      user = switchTo.name;
    } else notes.push(`setpriv not found, so not as ${switchTo.name}`);
  }
  const run = async (limits) => {
    const wrap = limits ? ["prlimit", `--memlock=${limitArg(limits.soft)}:${limitArg(limits.hard)}`, "--"] : [];
    const argv = [...wrap, ...asUser, exe, "validate", "--run", test];
    let r2 = await m.exec(argv[0], argv.slice(1), { timeoutMs: c.timeoutS * 1e3 });
    if (limits && (r2.missing || /prlimit: failed to set/i.test(r2.stderr))) {
      notes.push(r2.missing ? "prlimit not found: the limits were not applied" : `prlimit could not apply the limits (${oneLine(r2.stderr.trim().split("\n")[0])})`);
      const plain = [...asUser, exe, "validate", "--run", test];
      r2 = await m.exec(plain[0], plain.slice(1), { timeoutMs: c.timeoutS * 1e3 });
    }
    return r2;
  };
  const limitsNote = c.limits ? `memlock ${fmtLimits(c.limits)} (${c.limitsFrom})` : "memlock unknown";
  const who = () => `as ${user}, ${limitsNote}${notes.length ? `; ${notes.join("; ")}` : ""}`;
  const r = await run(c.applyLimits ? c.limits : null);
  const out = `${r.stdout}
${r.stderr}`;
  const power = parseXrtValidate(out).powerMode;
  const evidence = async () => {
    const lines = await c.linesSince(now);
    return lines.length ? `; the driver logged meanwhile: ${lines.slice(-3).map((l) => l.trim()).join(" | ")}` : "";
  };
  if (r.timedOut) {
    const said = tail(out, 2);
    return save({
      ...base,
      status: "fail",
      finding: "timeout",
      power_mode: power,
      detail: `${cmd} did not finish in ${c.timeoutS}s and was killed (${who()}): the NPU does not answer${said.length ? `; its last output: ${said.join(" | ")}` : ""}${await evidence()}`,
      fix: c.kernelFix ?? UNEXPLAINED_FIX
    });
  }
  const f = classifyValidate(out, r.status);
  if (f.kind === "pass") return save({ ...base, ...passed(cmd, out, who(), power), last_ok: { at: now.toISOString(), npu_lines: c.npuLines, npu_last: c.npuLast ?? null } });
  if (f.kind === "device") {
    return save({ ...base, status: "fail", finding: "device", power_mode: power, detail: `${cmd} failed (${who()}): ${oneLine(f.line ?? `exit ${r.status}`)}${await evidence()}`, fix: c.kernelFix ?? UNEXPLAINED_FIX });
  }
  const hostFinding = {
    kind: f.kind,
    detail: `${cmd} failed on ${HOST_WHAT[f.kind]} (${who()}), not on the NPU: ${oneLine(f.line ?? `exit ${r.status}`)}`,
    fix: hostFix(f, { limits: c.limits, service: c.service, user, xrt: c.xrt, test })
  };
  const raised = c.limits && f.kind === "memlock" && c.limits.soft !== "unlimited" && (c.limits.hard === "unlimited" || c.limits.hard > c.limits.soft) ? { soft: c.limits.hard, hard: c.limits.hard } : null;
  if (raised) {
    const r2 = await run(raised);
    const out2 = `${r2.stdout}
${r2.stderr}`;
    const again = `then with memlock raised to ${fmtLimit(raised.hard)}, as a job that raises it`;
    if (r2.timedOut) {
      return save({ ...base, host: hostFinding, status: "fail", finding: "timeout", detail: `${cmd} did not finish in ${c.timeoutS}s ${again}: the NPU does not answer${await evidence()}`, fix: c.kernelFix ?? UNEXPLAINED_FIX });
    }
    const f2 = classifyValidate(out2, r2.status);
    const power2 = parseXrtValidate(out2).powerMode;
    if (f2.kind === "pass") {
      const p = passed(cmd, out2, `${who()}; ${again}`, power2);
      return save({ ...base, host: hostFinding, ...p, last_ok: { at: now.toISOString(), npu_lines: c.npuLines, npu_last: c.npuLast ?? null } });
    }
    if (f2.kind === "device") {
      return save({ ...base, host: hostFinding, status: "fail", finding: "device", power_mode: power2, detail: `${cmd} failed ${again}: ${oneLine(f2.line ?? `exit ${r2.status}`)}${await evidence()}`, fix: c.kernelFix ?? UNEXPLAINED_FIX });
    }
  }
  return save({ ...base, host: hostFinding, status: "unknown", finding: hostFinding.kind, power_mode: power, detail: `${hostFinding.detail}; the NPU itself was not tested`, fix: hostFinding.fix });
}
function passed(cmd, out, who, power) {
  const details = parseXrtValidate(out).tests.flatMap((t) => t.details).join("; ");
  return { status: "ok", finding: "pass", power_mode: power, fix: null, detail: `${cmd} passed${details ? `: ${details}` : ""}${power ? ` (power mode ${power})` : ""} [${who}]` };
}
function checksFromRecord(rec, cached = null) {
  const note = cached ? ` (cached: ran at ${rec.at}, re-runs after ${cached.intervalS}s)` : "";
  const detail = rec.detail + note;
  const out = [];
  if (rec.status === "ok") out.push(dev.ok("functional", detail));
  else if (rec.status === "fail") out.push(dev.fail("functional", detail, rec.fix ?? UNEXPLAINED_FIX));
  else out.push(host.warn("functional", detail, rec.fix ?? "see the detail"));
  if (rec.host && rec.status !== "unknown") out.push(host.warn("functional-host", rec.host.detail + note, rec.host.fix));
  return out;
}
function withFix(res, stateDir, fix) {
  const rec = { ...res.record, fix };
  try {
    writeJson(functionalPath(stateDir), rec);
  } catch {
  }
  return { record: rec, checks: checksFromRecord(rec) };
}

// src/agent/doctor.ts
var MIN_FREE_BYTES = 5 * 1024 ** 3;
var NPU_PCI_DEVICE_IDS = ["1502", "17f0", "17f1", "17f2", "17f3", "1b0a", "1b0b", "1b0c"];
function npuGeneration(n, cpu = null) {
  if (!n) return null;
  return (generationOfName(n.vbnv, cpu) ?? generationOfPci(n.device, n.revision, cpu))?.id ?? null;
}
function cpuModel(m) {
  return /^model name\s*:\s*(.+)$/m.exec(m.read("/proc/cpuinfo") ?? "")?.[1].trim() ?? null;
}
var hex = (s) => s?.trim().replace(/^0x/i, "").toLowerCase() ?? null;
function findNpus(m) {
  const base = "/sys/bus/pci/devices";
  const all = m.list(base);
  if (!all) return null;
  const out = [];
  for (const bdf of all) {
    const d = `${base}/${bdf}`;
    if (hex(m.read(`${d}/vendor`)) !== "1022") continue;
    const device = hex(m.read(`${d}/device`));
    if (!device || !NPU_PCI_DEVICE_IDS.includes(device)) continue;
    const link = m.readlink(`${d}/driver`);
    out.push({
      bdf,
      device,
      revision: hex(m.read(`${d}/revision`)),
      driver: link ? basename(link) : null,
      vbnv: m.read(`${d}/vbnv`)?.trim() || null,
      fwVersion: m.read(`${d}/fw_version`)?.trim() || null
    });
  }
  return out;
}
function accelNodes(m) {
  return (m.list("/dev/accel") ?? []).map((name) => {
    const link = m.readlink(`/sys/class/accel/${name}/device`);
    const bdf = link ? basename(link) : null;
    const drv = m.readlink(`/sys/class/accel/${name}/device/driver`) ?? (bdf ? m.readlink(`/sys/bus/pci/devices/${bdf}/driver`) : null);
    return { node: `/dev/accel/${name}`, bdf, driver: drv ? basename(drv) : null };
  });
}
function driverVersion(m) {
  return m.read("/sys/module/amdxdna/version")?.trim() || null;
}
function checkPci(npus) {
  if (!npus) return dev.unknown("pci", "cannot read /sys/bus/pci/devices", "run on the NPU host itself (a container needs /sys mounted)");
  if (!npus.length) {
    return dev.fail(
      "pci",
      `no AMD NPU on the PCI bus (vendor 1022, device ${NPU_PCI_DEVICE_IDS.join("/")})`,
      "enable the NPU (some BIOS setups call it IPU) and power-cycle; a host without one cannot take NPU jobs (take its NPU label off)"
    );
  }
  return dev.ok("pci", npus.map((n) => `1022:${n.device}${n.revision ? ` rev ${n.revision}` : ""} at ${n.bdf}`).join(", "));
}
function checkDriver(m, npus, explained = null) {
  if (!m.exists("/sys/module/amdxdna")) {
    return dev.fail("driver", "amdxdna module not loaded", "sudo modprobe amdxdna (in-tree since Linux 6.14; older kernels need amd/xdna-driver's xrt_plugin-amdxdna package)");
  }
  const v = driverVersion(m);
  const ver = v ? `amdxdna ${v}` : "amdxdna (in-tree: no version file)";
  if (npus?.length) {
    const bound = npus.filter((n) => n.driver === "amdxdna");
    if (!bound.length) {
      const other = npus.find((n) => n.driver);
      const why3 = other ? `bound to ${other.driver}, not amdxdna` : "not bound to it: its probe failed (see kernel-log)";
      return dev.fail("driver", `${ver} loaded; the NPU at ${npus[0].bdf} is ${why3}`, other ? `unbind ${other.driver} from ${other.bdf}, then ${RELOAD}` : explained ?? powerCycleFix(npus[0].bdf));
    }
    return dev.ok("driver", `${ver}, bound to ${bound.map((n) => n.bdf).join(", ")}`);
  }
  return dev.ok("driver", `${ver} loaded`);
}
function checkDevice(m, npus, nodes, explained = null) {
  const ours = nodes.filter((n) => n.driver === "amdxdna");
  const unverified = nodes.filter((n) => n.driver === null);
  if (!ours.length && !unverified.length) {
    const others = nodes.length ? `${nodes.map((n) => `${n.node} (${n.driver})`).join(", ")} but ` : "";
    const base = `${others}no /dev/accel node of amdxdna`;
    if (npus && !npus.length) return dev.fail("device", `${base}: no NPU on the PCI bus`, "enable the NPU in the BIOS setup, or take this host out of NPU rotation");
    if (!m.exists("/sys/module/amdxdna")) return dev.fail("device", `${base}: the amdxdna module is not loaded`, "sudo modprobe amdxdna");
    const bdf = npus?.[0]?.bdf ?? null;
    return dev.fail("device", `${base}: the driver could not probe the NPU${bdf ? ` at ${bdf}` : ""}`, explained ?? powerCycleFix(bdf));
  }
  const use = ours.length ? ours : unverified;
  const denied = use.filter((n) => {
    try {
      accessSync(m.path(n.node), constants.R_OK | constants.W_OK);
      return false;
    } catch {
      return true;
    }
  });
  const names = use.map((n) => n.driver ? `${n.node} (amdxdna${n.bdf ? `, ${n.bdf}` : ""})` : n.node).join(", ");
  if (denied.length === use.length) {
    return host.warn(
      "device",
      `${names} present but not readable and writable by this user`,
      "add the runner user to the render group (sudo usermod -aG render $USER), then restart the runner service"
    );
  }
  if (!ours.length) return dev.unknown("device", `${names}: sysfs does not say which driver it belongs to (no /sys/class/accel entry)`, "check readlink /sys/class/accel/accel0/device/driver names amdxdna");
  return dev.ok("device", names);
}
function checkFirmware(npus) {
  const n = npus?.find((x) => x.driver === "amdxdna");
  if (!n) return dev.unknown("firmware", "no NPU bound to amdxdna: no firmware to ask", "see driver and device");
  if (!n.fwVersion) return dev.unknown("firmware", `${n.vbnv ?? n.bdf}: the driver exposes no fw_version attribute (an older amdxdna)`, "xrt-smi examine shows the NPU firmware version");
  if (/^0(\.0)*$/.test(n.fwVersion)) return dev.fail("firmware", `${n.vbnv ?? n.bdf}: firmware reports ${n.fwVersion} (not running)`, powerCycleFix(n.bdf));
  return dev.ok("firmware", `${n.vbnv ?? "NPU"} [${n.bdf}], firmware ${n.fwVersion}`);
}
var XRT_SMI_INSTALLED = "/opt/xilinx/xrt/bin/xrt-smi";
function runXrtSmi(m, args = ["examine"], timeoutMs) {
  let r = m.run("xrt-smi", args, timeoutMs);
  if (r.missing && m.exists(XRT_SMI_INSTALLED)) r = m.run(m.path(XRT_SMI_INSTALLED), args, timeoutMs);
  return r;
}
async function execXrtSmi(m, args = ["examine"], timeoutMs) {
  let r = await m.exec("xrt-smi", args, { timeoutMs });
  if (r.missing && m.exists(XRT_SMI_INSTALLED)) r = await m.exec(m.path(XRT_SMI_INSTALLED), args, { timeoutMs });
  return r;
}
function checkXrt(m, r, limits, service) {
  if (r.missing) return host.warn("xrt-smi", "xrt-smi not found", "source /opt/xilinx/xrt/setup.sh (or install XRT) so xrt-smi is on PATH");
  const x = parseXrtSmi(r.stdout + "\n" + r.stderr);
  if (x.memlockError) return host.warn("xrt-smi", `xrt-smi examine: ${oneLine(x.memlockError)}`, MEMLOCK_FIRST(limits, service));
  if (r.status !== 0) {
    const why3 = r.error ?? (`${r.stderr}
${r.stdout}`.trim().split("\n").pop() || `exit ${r.status}`);
    return host.warn("xrt-smi", `xrt-smi examine failed: ${oneLine(why3)}`, lowMemlock(limits) ? MEMLOCK_FIRST(limits, service) : "check the XRT install and the amdxdna driver (xrt-smi examine by hand)");
  }
  const versions = [x.xrt && `XRT ${x.xrt}`, x.amdxdna && `amdxdna ${x.amdxdna}${x.inTree ? " (in-tree)" : ""}`, x.firmware && `firmware ${x.firmware}`].filter(Boolean).join(", ");
  if (!x.devices.length) {
    return host.warn("xrt-smi", `no device listed${versions ? ` (${versions})` : ""}`, lowMemlock(limits) ? MEMLOCK_FIRST(limits, service) : "XRT sees no NPU: see device and kernel-log");
  }
  const devs = x.devices.map((d) => `${d.name} [${d.bdf}]`).join(", ");
  return host.ok("xrt-smi", `${devs}${versions ? `; ${versions}` : ""}`);
}
function freeBytes(m, path) {
  let p = resolve3(path);
  while (!existsSync2(p) && dirname2(p) !== p) p = dirname2(p);
  try {
    const s = m.statfs(p);
    return { path: p, free: s.bavail * s.bsize };
  } catch {
    return null;
  }
}
function checkDisk(m, id, label, path, min) {
  const f = freeBytes(m, path);
  if (!f) return host.warn(id, `${label} ${path}: cannot stat the file system`, "check the path exists and is readable");
  const detail = `${label} ${path}: ${formatBytes(f.free)} free`;
  if (f.free < min) return host.warn(id, `${detail} (under ${formatBytes(min)})`, `free space: npu-block-gate agent cache gc --max-bytes 5G, and clear old runs/ and build_peano/ dirs`);
  return host.ok(id, detail);
}
function checkHfCache(m) {
  const dir = hfHubCache(m.env, m.home());
  const offline = hfOffline(m.env);
  let entries = [];
  try {
    entries = readdirSync2(dir).filter((n) => !n.startsWith("."));
  } catch {
  }
  if (entries.length) {
    const models = entries.filter((n) => n.startsWith("models--")).length;
    return host.ok("hf-cache", `${dir}: ${models} model(s)${offline ? " (HF_HUB_OFFLINE=1)" : ""}`);
  }
  if (offline) return host.warn("hf-cache", `${dir} missing or empty and HF_HUB_OFFLINE=1: reference runs cannot load a model`, "warm the cache once online (huggingface-cli download <model>), or point hooks install --hf-home at the warm cache");
  return host.ok("hf-cache", `${dir} missing or empty (models download on first use)`);
}
async function checkPython(m, explicit, stateDir = null) {
  try {
    const p = await findPythonAsync(explicit, m.env, stateDir ? keptTester(m.pythonAsync, join4(stateDir, STATE_FILES.python)) : m.pythonAsync);
    const said = `${p.executable} (Python ${p.version}, numpy ${p.numpy}; from ${p.source})`;
    if (p.note) return host.warn("python", `${said}, but ${p.note}`, "a wrapper script that starts a background job should not leave it holding stdout (redirect it, or exec the Python)");
    return host.ok("python", said);
  } catch (e) {
    const fix = "pass --python (hooks install --python) or set NPU_BLOCK_GATE_PYTHON to the mlir-air environment (e.g. /opt/mlir-air/ironenv/bin/python)";
    if (explicit || m.env.NPU_BLOCK_GATE_PYTHON) return host.fail("python", oneLine(e), fix);
    return host.warn("python", `${oneLine(e)} (fine when the job builds its own venv, as mlir-air's CI does)`, fix);
  }
}
function checkLock(m) {
  const s = lockState(m);
  if (!s.path) return host.ok("npu-lock", "off (NPU_BLOCK_GATE_NPU_LOCK=none)");
  if (!s.holder) return host.ok("npu-lock", `${s.path}: free${s.exists ? "" : " (no lock file yet)"}`);
  return host.warn("npu-lock", `${s.path}: ${describeHolder(s)}`, `a run is using the NPU; wait for it (the kernel drops the lock when pid ${s.holder.pid} exits)`);
}
var EXPLAINS_PROBE = ["firmware-missing", "firmware-too-old", "hypervisor"];
async function doctorReport(m, o = {}) {
  const min = o.minFreeBytes ?? MIN_FREE_BYTES;
  const cacheRoot = o.cacheDir ?? defaultCacheRoot(m.env);
  const workspace = o.workspace ?? m.env.GITHUB_WORKSPACE ?? m.cwd;
  const stateDir = o.stateDir ?? defaultStateDir(m);
  const service = o.service ?? null;
  const intervalS = o.functionalMaxAgeS ?? FUNCTIONAL_MAX_AGE_S;
  const python = o.deviceOnly ? null : checkPython(m, o.python ?? null, stateDir);
  const npus = findNpus(m);
  const nodes = accelNodes(m);
  const npu = npus?.find((n) => n.driver === "amdxdna") ?? npus?.[0] ?? null;
  const bdf = npu?.bdf ?? null;
  const limits = memlockLimits(m);
  const xr = await execXrtSmi(m);
  const xrt = xr.missing ? null : parseXrtSmi(xr.stdout + "\n" + xr.stderr);
  const boot = bootId(m);
  const node = nodes.some((n) => n.driver === "amdxdna" || n.driver === null);
  const prev = lastFunctional(stateDir);
  let cleared = lastPass(prev, boot);
  const readOpts = { bdf, maxBytes: o.kernelLogMaxBytes };
  let log = await readKernelLog(m, { ...readOpts, since: cleared ? new Date(cleared.at) : null });
  let kl = checkKernelLog(log, { bdf, node, cleared });
  const explained = kl.scan?.found.find((w) => EXPLAINS_PROBE.includes(w.id))?.fix ?? null;
  const checks = [checkPci(npus), checkDriver(m, npus, explained), checkDevice(m, npus, nodes, explained), checkFirmware(npus), kl.check];
  const tail2 = [checkMemlock(limits, service), checkXrt(m, xr, limits, service)];
  const when = o.functional ?? "never";
  const reason = node ? probeReason({ kernel: kl.check, lastPass: cleared, now: m.now(), intervalS, recentPassVouches: o.recentPassVouches }) : null;
  let functional = [];
  let functionalRan = false;
  let power = prev?.power_mode ?? null;
  if (when === "always" || when === "auto" && reason) {
    const stands = when === "auto" && prev && reusable(prev, { boot, now: m.now(), intervalS, resetSince: resetAfter(log, new Date(prev.at)) });
    if (stands) functional = checksFromRecord(prev, { intervalS });
    else {
      const svcLimits = service ? serviceLimits(m, service) : null;
      const apply = !!svcLimits && (!limits || svcLimits.soft !== limits.soft || svcLimits.hard !== limits.hard);
      const device = kl.check.status === "fail" || kl.check.status === "warn" ? kl.check.fix : null;
      await python;
      let res = await runFunctional(m, {
        stateDir,
        test: o.functionalTest ?? null,
        xrt: xrt?.xrt ?? null,
        timeoutS: o.functionalTimeoutS ?? FUNCTIONAL_TIMEOUT_S,
        limits: apply ? svcLimits : limits,
        limitsFrom: apply ? `${service}'s LimitMEMLOCK` : "this process's, as the runner's jobs get them",
        applyLimits: apply,
        runAs: o.runnerAccount ?? null,
        bdf,
        npuLines: kl.scan?.lines ?? null,
        service,
        kernelFix: device,
        npuLast: "error" in log ? null : log.lines[log.lines.length - 1] ?? cleared?.npu_last ?? null,
        linesSince: async (t) => {
          const l = await readKernelLog(m, { ...readOpts, since: t });
          return "error" in l ? [] : l.lines;
        },
        lastPass: cleared
      });
      functionalRan = true;
      power = res.record.power_mode ?? power;
      if (res.record.status === "ok") {
        cleared = res.record.last_ok;
        kl = checkKernelLog(log, { bdf, node, cleared });
      } else if (res.record.status === "fail") {
        log = await readKernelLog(m, { ...readOpts, since: cleared ? new Date(cleared.at) : null });
        kl = checkKernelLog(log, { bdf, node, cleared });
        if ((kl.check.status === "fail" || kl.check.status === "warn") && kl.check.fix) res = withFix(res, stateDir, kl.check.fix);
      }
      functional = res.checks;
    }
  }
  checks[4] = kl.check;
  if (kl.host) checks.push(kl.host);
  checks.push(...tail2, ...functional);
  if (python) checks.push(
    checkDisk(m, "disk-cache", "kernel cache", cacheRoot, min),
    checkDisk(m, "disk-workspace", "workspace", workspace, min),
    checkHfCache(m),
    await python,
    checkLock(m)
  );
  const versions = {
    xrt: xrt?.xrt ?? null,
    amdxdna: driverVersion(m) ?? xrt?.amdxdna ?? null,
    firmware: npu?.fwVersion ?? xrt?.firmware ?? null
  };
  return { checks, facts: { npu, nodes, xrt, versions, powerMode: power, kernel: kl.scan, functionalRan, functionalReason: reason } };
}
var LABEL = { ok: "ok", warn: "WARN", fail: "FAIL", unknown: "UNKNOWN" };
function renderChecks(checks, root) {
  const w = Math.max(...checks.map((c) => c.id.length));
  const lines = [`npu-block-gate agent doctor${root === "/" ? "" : ` (root ${root})`}`];
  for (const c of checks) {
    lines.push(`  ${LABEL[c.status].padEnd(7)}  ${c.id.padEnd(w)}  ${c.detail}`);
    if (c.fix) lines.push(`  ${"".padEnd(7)}  ${"".padEnd(w)}  fix: ${c.fix}`);
  }
  const s = summarize(checks);
  lines.push(`${s.ok} ok, ${s.warn} warn, ${s.fail} fail, ${s.unknown} unknown${s.fail ? ": this runner cannot run NPU jobs (exit 3)" : ""}`);
  return lines.join("\n") + "\n";
}

// src/agent/fleet.ts
var obj = (v) => v && typeof v === "object" && !Array.isArray(v) ? v : null;
var str = (v) => typeof v === "string" && v ? v : null;
function row(s, source) {
  const npu = obj(s.npu);
  const versions = obj(s.versions);
  const driver = obj(s.driver);
  const lastJob = obj(s.last_job);
  const drain2 = obj(s.drain);
  const gen = str(npu?.generation);
  const name = str(npu?.name);
  const drained = !drain2 ? "no" : drain2.drained === true ? `yes (${str(drain2.method) ?? "?"}, since ${str(drain2.at) ?? "?"})` : `no (${str(drain2.state) ?? "?"})`;
  return {
    runner: str(s.runner) ?? source,
    npu: gen ? `${generationName(gen)}${name && name !== generationName(gen) ? ` (${name})` : ""}` : name ?? (Array.isArray(s.device) && s.device.length ? "?" : "none"),
    driver: str(versions?.amdxdna) ?? str(driver?.version) ?? (driver?.loaded === false ? "not loaded" : "?"),
    firmware: str(versions?.firmware) ?? "?",
    health: str(s.health) ?? "unknown",
    drained,
    last_job: lastJob ? `${str(lastJob.finished_at) ?? "?"}${str(lastJob.outcome) ? ` ${lastJob.outcome}` : ""}${lastJob.device_ok === false ? " (NPU failed after it)" : ""}` : "none",
    source
  };
}
function fleetRows(inputs) {
  const rows = [];
  for (const { source, text } of inputs) {
    let j;
    try {
      j = JSON.parse(text);
    } catch (e) {
      throw new InputError(`not JSON (${oneLine(e)}): expected the output of npu-block-gate agent status --json`, source);
    }
    const list = Array.isArray(j) ? j : [j];
    list.forEach((s, i) => {
      const o = obj(s);
      const where = Array.isArray(j) ? `${source}[${i}]` : source;
      if (!o || !("device" in o) || !("versions" in o)) throw new InputError('not an agent status (no "device" and "versions"): expected the output of npu-block-gate agent status --json', where);
      rows.push(row(o, where));
    });
  }
  return rows.sort((a, b) => a.runner.localeCompare(b.runner) || a.source.localeCompare(b.source));
}
var HEAD = [["runner", "runner"], ["npu", "npu"], ["driver", "driver"], ["firmware", "firmware"], ["health", "health"], ["drained", "drained"], ["last_job", "last job"]];
function renderFleet(rows) {
  const cells = rows.map((r) => HEAD.map(([k]) => r[k]));
  const w = HEAD.map(([, h], i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c) => c.map((x, i) => x.padEnd(w[i])).join("  ").trimEnd();
  const failing = rows.filter((r) => r.health === "failing").length;
  const drained = rows.filter((r) => r.drained.startsWith("yes")).length;
  return [line(HEAD.map(([, h]) => h)), ...cells.map(line), `${rows.length} runner(s): ${failing} failing, ${drained} drained`].join("\n") + "\n";
}

// src/agent/runner.ts
import { readFileSync as readFileSync3, statSync as statSync2 } from "node:fs";
import { join as join5, resolve as resolve4 } from "node:path";
function readRunnerSettings(runnerDir) {
  const file = join5(resolve4(runnerDir), ".runner");
  let text;
  try {
    text = readFileSync3(file, "utf8");
  } catch {
    throw new InputError(`no .runner file: is --runner-dir the runner's install dir (where config.sh wrote it)?`, file);
  }
  let j;
  try {
    j = JSON.parse(text.replace(/^\uFEFF/, ""));
  } catch (e) {
    throw new InputError(`not JSON (${oneLine(e)})`, file);
  }
  const id = Number(j.agentId);
  if (!Number.isInteger(id) || id <= 0) throw new InputError('no "agentId" (the runner id): configure the runner with config.sh first', file);
  return { agentId: id, agentName: typeof j.agentName === "string" ? j.agentName : null, gitHubUrl: typeof j.gitHubUrl === "string" ? j.gitHubUrl : null, ephemeral: j.ephemeral === true, file };
}
function serviceName(runnerDir) {
  if (!runnerDir) return null;
  try {
    return readFileSync3(join5(resolve4(runnerDir), ".service"), "utf8").trim() || null;
  } catch {
    return null;
  }
}
function runnerName(m, runnerDir) {
  if (runnerDir) {
    try {
      const s = readRunnerSettings(runnerDir);
      if (s.agentName) return s.agentName;
    } catch {
    }
  }
  return m.env.RUNNER_NAME || m.hostname;
}
function jobRunning(m) {
  for (const pid of (m.list("/proc") ?? []).filter((n) => /^\d+$/.test(n))) {
    const c = m.readBytes(`/proc/${pid}/cmdline`)?.toString("utf8") ?? "";
    if (/Runner\.Worker/.test(c)) return true;
  }
  return false;
}
function accountByUid(m, uid) {
  for (const l of (m.read("/etc/passwd") ?? "").split("\n")) {
    const f = l.split(":");
    if (f.length >= 4 && Number(f[2]) === uid && f[2].trim() !== "") return { name: f[0], uid, gid: Number(f[3]) };
  }
  return null;
}
function runnerAccount(m, runnerDir) {
  if (!runnerDir) return null;
  let uid;
  try {
    uid = statSync2(join5(resolve4(runnerDir), ".runner")).uid;
  } catch {
    return null;
  }
  return accountByUid(m, uid) ?? { name: String(uid), uid, gid: uid };
}
var systemctlPath = (m) => m.exists("/usr/bin/systemctl") || !m.exists("/bin/systemctl") ? "/usr/bin/systemctl" : "/bin/systemctl";
var USER_NAME = /^[a-z_][a-z0-9_-]*[$]?$/;
var USER_NAME_MAX = 32;
var isUserName = (s) => s.length <= USER_NAME_MAX && USER_NAME.test(s);
var UNIT_NAME = /^[A-Za-z0-9@._](?:[A-Za-z0-9@._-]|\\x[0-9a-fA-F]{2})*\.service$/;
var isUnitName = (s) => s.length <= 255 && UNIT_NAME.test(s);
var sudoersArg = (a) => a.replace(/[\\,:=]/g, (c) => `\\${c}`);
function drainSudoersRule(user, service, systemctl = "/usr/bin/systemctl") {
  if (!isUserName(user)) throw new InputError(`${JSON.stringify(user)}: not a user name (lower case letters, digits, _ and -, at most 32): no sudoers rule is made for it`);
  if (!isUnitName(service)) throw new InputError(`${JSON.stringify(service)}: not a systemd service name (letters, digits, @ . _ - and \\xNN escapes, ending in .service): no sudoers rule is made for it`);
  if (systemctl !== "/usr/bin/systemctl" && systemctl !== "/bin/systemctl") throw new InputError(`${JSON.stringify(systemctl)}: not /usr/bin/systemctl or /bin/systemctl`);
  return `${user} ALL=(root) NOPASSWD: ${systemctl} stop ${sudoersArg(service)}, ${systemctl} start ${sudoersArg(service)}`;
}

// src/agent/status.ts
import { existsSync as existsSync3, readdirSync as readdirSync3, readFileSync as readFileSync5, statSync as statSync4 } from "node:fs";
import { join as join7 } from "node:path";

// src/agent/drain.ts
import { readFileSync as readFileSync4, rmSync, statSync as statSync3 } from "node:fs";
import { join as join6, resolve as resolve5 } from "node:path";
function runnerScope(s, apiUrl) {
  if (!s.gitHubUrl) throw new InputError('no "gitHubUrl": cannot tell which repository or organization the runner belongs to', s.file);
  let u;
  try {
    u = new URL(s.gitHubUrl);
  } catch {
    throw new InputError(`"gitHubUrl" ${JSON.stringify(s.gitHubUrl)} is not a URL`, s.file);
  }
  const parts = u.pathname.split("/").filter(Boolean);
  const api = (apiUrl ?? (u.hostname === "github.com" ? "https://api.github.com" : `${u.origin}/api/v3`)).replace(/\/+$/, "");
  if (parts[0] === "enterprises") throw new InputError(`${s.gitHubUrl} is an enterprise runner: drain it from the enterprise settings, or drain by stopping the service (no --token-file)`, s.file);
  if (parts.length === 1) return { kind: "org", org: parts[0], apiUrl: api };
  if (parts.length === 2) return { kind: "repo", owner: parts[0], repo: parts[1], apiUrl: api };
  throw new InputError(`"gitHubUrl" ${s.gitHubUrl} names neither a repository nor an organization`, s.file);
}
function readTokenFile(path) {
  const p = resolve5(path);
  let mode;
  try {
    mode = statSync3(p).mode & 511;
  } catch {
    throw new InputError("no such token file", `--token-file ${p}`);
  }
  if (mode & 63) throw new InputError(`readable by group or others (mode ${mode.toString(8).padStart(4, "0")}): chmod 600 it`, `--token-file ${p}`);
  const token = readFileSync4(p, "utf8").trim();
  if (!token || /\s/.test(token)) throw new InputError("empty, or more than one word: it must hold only the token", `--token-file ${p}`);
  return token;
}
var Labels = class {
  constructor(gh, scope, id, httpStatus) {
    this.gh = gh;
    this.scope = scope;
    this.id = id;
    this.httpStatus = httpStatus;
  }
  gh;
  scope;
  id;
  httpStatus;
  base() {
    return this.scope.kind === "repo" ? { route: "repos/{owner}/{repo}", params: { owner: this.scope.owner, repo: this.scope.repo } } : { route: "orgs/{org}", params: { org: this.scope.org } };
  }
  async call(method, tail2, extra = {}) {
    const b = this.base();
    const what = `${method} /${b.route}/actions/runners/${this.id}/labels${tail2.replace("{name}", String(extra.name ?? ""))}`;
    try {
      const r = await this.gh.request(`${method} /${b.route}/actions/runners/{runner_id}/labels${tail2}`, { ...b.params, runner_id: this.id, ...extra });
      return r.data.labels ?? [];
    } catch (e) {
      const st = this.httpStatus(e);
      const hint = st === 401 ? ": the token is not valid" : st === 403 ? ": the token may not administer this runner (repository Administration: write, or organization Self-hosted runners: write)" : st === 404 ? ": no such runner here (or the token cannot see it)" : "";
      throw new InfraError(`GitHub ${what}: ${st ?? "no answer"} ${oneLine(e)}${hint}`);
    }
  }
  list() {
    return this.call("GET", "");
  }
  remove(name) {
    return this.call("DELETE", "/{name}", { name });
  }
  add(labels2) {
    return this.call("POST", "", { labels: labels2 });
  }
};
var drainPath = (stateDir) => join6(stateDir, STATE_FILES.drain);
var readDrain = (stateDir) => readJson(drainPath(stateDir));
async function labelsFor(m, scope, token, id) {
  const { RetryOctokit, httpStatus, proxyFetch } = await import("./octokit-LMS4AMTH.js");
  const quiet = { debug() {
  }, info() {
  }, warn() {
  }, error() {
  } };
  const gh = new RetryOctokit({ auth: token, baseUrl: scope.apiUrl, userAgent: "npu-block-gate-agent", request: { fetch: proxyFetch(m.env, scope.apiUrl) }, log: quiet, retry: { retries: 2 } });
  return new Labels(gh, scope, id, httpStatus);
}
function sudoersHint(m, svc) {
  let rule;
  try {
    rule = drainSudoersRule(m.user(), svc, systemctlPath(m));
  } catch (e) {
    return `agent setup installs no rule for it: ${oneLine(e)}`;
  }
  return `install the sudoers rule drain needs with sudo npu-block-gate agent setup --runner-user ${m.user()} --runner-dir <runner dir> (it writes: ${rule})`;
}
var why = (r) => oneLine(r.error ?? (r.stderr.trim() || r.stdout.trim() || `exit ${r.status}`));
function serviceState(m, svc) {
  const r = m.run("systemctl", ["is-active", svc], 15e3);
  if (r.missing) return null;
  return r.stdout.trim().split("\n").pop() || null;
}
var stopped = (state) => state === "inactive" || state === "failed";
async function stopNow(m, svc) {
  const r = m.run("sudo", ["-n", "systemctl", "stop", svc], 12e4);
  if (r.status !== 0) throw new InfraError(`sudo -n systemctl stop ${svc} failed: ${why(r)}; not drained: ${sudoersHint(m, svc)}`);
  let state = serviceState(m, svc);
  for (let i = 0; i < 10 && state === "deactivating"; i++) {
    await m.sleep(1e3);
    state = serviceState(m, svc);
  }
  if (!stopped(state)) throw new InfraError(`sudo -n systemctl stop ${svc} exited 0 but systemctl is-active says ${state ?? "nothing (systemctl not found)"}: not drained`);
  return `stopped the runner service ${svc} (systemctl is-active: ${state})`;
}
function scheduleStop(m, svc, delayS, stateDir, stopId) {
  const may = m.run("sudo", ["-n", "-l", "systemctl", "stop", svc], 15e3);
  if (may.status !== 0) throw new InfraError(`sudo will not run systemctl stop ${svc} for ${m.user()} (sudo -n -l: ${why(may)}): not drained, the runner keeps taking jobs; ${sudoersHint(m, svc)}`);
  const r = m.run("sh", ["-c", stopScript(drainPath(stateDir), svc, delayS, stopId)], { detached: true });
  if (r.status !== 0) throw new InfraError(`could not start the background stop of ${svc}: ${why(r)}: not drained`);
  return `the runner service ${svc} is to stop in ${delayS}s, after this job (sudo -n systemctl stop ${svc}; sudo allows it; undrain before then cancels it); not drained until systemctl is-active says so (agent status checks)`;
}
var shQuote = (s) => `'${s.replace(/'/g, `'\\''`)}'`;
function stopScript(recordPath, svc, delayS, stopId) {
  return `sleep ${delayS}; grep -qF ${shQuote(`"stop_id": "${stopId}"`)} ${shQuote(recordPath)} 2>/dev/null || exit 0; exec sudo -n systemctl stop ${svc}`;
}
var newStopId = (m) => `${m.now().getTime().toString(36)}-${process.pid.toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
async function drain(m, o) {
  const prev = readDrain(o.stateDir);
  const now = m.now().toISOString();
  const settings = readRunnerSettings(o.runnerDir);
  const base = { at: prev?.state === "drained" ? prev.at : now, reason: o.reason, runner_id: settings.agentId, runner_name: settings.agentName };
  if (o.tokenFile) {
    const scope = runnerScope(settings, o.apiUrl);
    const labels2 = await labelsFor(m, scope, readTokenFile(o.tokenFile), settings.agentId);
    const current = await labels2.list();
    const custom = current.filter((l) => l.type !== "read-only").map((l) => l.name);
    const want = o.labels.length ? o.labels : custom;
    const lines = [];
    const removed = [];
    for (const name of want) {
      if (!current.some((l) => l.name === name)) {
        lines.push(`label ${name}: not on runner ${settings.agentName ?? settings.agentId}`);
        continue;
      }
      await labels2.remove(name);
      removed.push(name);
    }
    const had = [.../* @__PURE__ */ new Set([...prev?.state === "drained" ? prev.labels : [], ...removed])];
    if (!had.length) {
      throw new InputError(`nothing to drain: runner ${settings.agentName ?? settings.agentId} has labels ${current.map((l) => l.name).join(", ") || "(none)"} and none of them ${o.labels.length ? "is one of --label" : "is a custom label"}`, o.labels.length ? "--label" : void 0);
    }
    const after = (await labels2.list()).map((l) => l.name);
    const left = had.filter((l) => after.includes(l));
    if (left.length) {
      const record3 = { ...base, method: "labels", labels: had, service: null, state: "refused", evidence: `label${left.length > 1 ? "s" : ""} ${left.join(", ")} still on the runner after DELETE` };
      if (prev?.state !== "drained") writeJson(drainPath(o.stateDir), record3);
      throw new InfraError(`runner ${settings.agentName ?? settings.agentId} still has ${left.join(", ")} after removing them (read back): not drained`);
    }
    for (const name of removed) lines.push(`removed label ${name} from runner ${settings.agentName ?? settings.agentId} (id ${settings.agentId}); read back: gone`);
    const record2 = { ...base, method: "labels", labels: had, service: null, state: "drained", evidence: `labels read back: ${had.join(", ")} gone (runner has ${after.join(", ") || "no labels"})` };
    writeJson(drainPath(o.stateDir), record2);
    return { record: record2, lines };
  }
  const svc = serviceName(o.runnerDir);
  if (!svc) throw new InputError("no .service file (svc.sh install writes it): drain needs the runner installed as a service, or --token-file to drain by label", join6(resolve5(o.runnerDir), ".service"));
  const rec = (state, evidence) => ({ ...base, method: "service", labels: [], service: svc, state, evidence });
  const refuse = (e) => {
    if (prev?.state !== "drained") writeJson(drainPath(o.stateDir), rec("refused", oneLine(e)));
    throw e;
  };
  let record;
  let line;
  try {
    if (o.fromHook) {
      const stopId = newStopId(m);
      writeJson(drainPath(o.stateDir), { ...rec("pending", "scheduling the service stop"), stop_id: stopId });
      line = scheduleStop(m, svc, o.stopDelayS ?? 30, o.stateDir, stopId);
      record = { ...rec("pending", line), stop_id: stopId };
    } else if (jobRunning(m)) {
      const may = m.run("sudo", ["-n", "-l", "systemctl", "stop", svc], 15e3);
      if (may.status !== 0) throw new InfraError(`sudo will not run systemctl stop ${svc} for ${m.user()} (sudo -n -l: ${why(may)}): not drained; ${sudoersHint(m, svc)}`);
      line = `a job is running: the job-completed hook stops ${svc} when it ends (not drained until then)`;
      record = rec("waiting", line);
    } else {
      line = await stopNow(m, svc);
      record = rec("drained", line);
    }
  } catch (e) {
    return refuse(e);
  }
  writeJson(drainPath(o.stateDir), record);
  return { record, lines: [line] };
}
function finishPendingDrain(m, stateDir, delayS = 30) {
  const rec = readDrain(stateDir);
  if (!rec || rec.method !== "service" || rec.state !== "waiting" || !rec.service) return null;
  try {
    const stopId = newStopId(m);
    writeJson(drainPath(stateDir), { ...rec, state: "pending", stop_id: stopId });
    const line = scheduleStop(m, rec.service, delayS, stateDir, stopId);
    writeJson(drainPath(stateDir), { ...rec, state: "pending", evidence: line, stop_id: stopId });
    return line;
  } catch (e) {
    writeJson(drainPath(stateDir), { ...rec, state: "refused", evidence: oneLine(e) });
    throw e;
  }
}
function drainStatus(m, stateDir) {
  const rec = readDrain(stateDir);
  if (!rec) return null;
  if (rec.method === "service" && rec.service && (rec.state === "pending" || rec.state === "waiting")) {
    const state = serviceState(m, rec.service);
    if (stopped(state)) return { ...rec, state: "drained", evidence: `systemctl is-active ${rec.service}: ${state}`, drained: true };
    return { ...rec, evidence: `${rec.evidence}; systemctl is-active ${rec.service}: ${state ?? "unknown"}`, drained: false };
  }
  if (rec.method === "service" && rec.service && rec.state === "drained") {
    const state = serviceState(m, rec.service);
    if (state !== null && !stopped(state)) return { ...rec, state: "restarted", evidence: `drained at ${rec.at}, but the service was started again: systemctl is-active ${rec.service}: ${state}`, drained: false };
  }
  return { ...rec, drained: rec.state === "drained" };
}
async function undrain(m, o) {
  const rec = readDrain(o.stateDir);
  const settings = readRunnerSettings(o.runnerDir);
  let functional = null;
  if (!o.force) {
    const last = lastFunctional(o.stateDir);
    const fresh = last && last.status === "ok" && (!rec || new Date(last.at).getTime() >= new Date(rec.at).getTime()) && (m.now().getTime() - new Date(last.at).getTime()) / 1e3 < FUNCTIONAL_MAX_AGE_S;
    if (fresh) functional = { id: "functional", status: "ok", scope: "device", detail: `${last.detail} (ran at ${last.at}, after the drain)`, fix: null };
    else {
      const x = runXrtSmi(m);
      const xrt = x.missing ? null : parseXrtSmi(x.stdout).xrt;
      const npu = findNpus(m)?.find((n) => n.driver === "amdxdna") ?? null;
      const res = await runFunctional(m, {
        stateDir: o.stateDir,
        test: o.functionalTest,
        xrt,
        timeoutS: o.functionalTimeoutS ?? FUNCTIONAL_TIMEOUT_S,
        limits: memlockLimits(m),
        limitsFrom: "this process's",
        applyLimits: false,
        runAs: m.uid === 0 ? runnerAccount(m, o.runnerDir) : null,
        bdf: npu?.bdf ?? null,
        npuLines: null,
        service: serviceName(o.runnerDir),
        kernelFix: null,
        linesSince: async () => [],
        lastPass: last?.last_ok ?? null
      });
      functional = res.checks[0];
    }
    if (functional.status !== "ok") {
      throw new InfraError(`the functional probe did not pass (${functional.status}: ${functional.detail}); the runner stays drained${functional.fix ? `; fix: ${functional.fix}` : ""}`);
    }
  }
  const lines = [];
  const method = rec?.method ?? (o.tokenFile ? "labels" : "service");
  if (method === "labels") {
    if (!o.tokenFile) throw new InputError("the runner was drained by label: pass --token-file (or hooks install --token-file) to put the labels back", "--token-file");
    const want = [.../* @__PURE__ */ new Set([...rec?.labels ?? [], ...o.labels])];
    if (!want.length) throw new InputError("no drain record names the labels to restore: pass --label", "--label");
    const scope = runnerScope(settings, o.apiUrl);
    const labels2 = await labelsFor(m, scope, readTokenFile(o.tokenFile), settings.agentId);
    await labels2.add(want);
    const after = (await labels2.list()).map((l) => l.name);
    const missing = want.filter((l) => !after.includes(l));
    if (missing.length) throw new InfraError(`runner ${settings.agentName ?? settings.agentId} lacks ${missing.join(", ")} after adding them (read back): still drained`);
    lines.push(`restored label${want.length > 1 ? "s" : ""} ${want.join(", ")} on runner ${settings.agentName ?? settings.agentId} (id ${settings.agentId}); read back: present`);
  } else {
    const svc = rec?.service ?? serviceName(o.runnerDir);
    if (!svc) throw new InputError("no .service file: start the runner yourself (./run.sh)", join6(resolve5(o.runnerDir), ".service"));
    const r = m.run("sudo", ["-n", "systemctl", "start", svc], 12e4);
    if (r.status !== 0) throw new InfraError(`sudo -n systemctl start ${svc} failed: ${why(r)}; ${sudoersHint(m, svc)}`);
    const state = serviceState(m, svc);
    if (state !== null && state !== "active" && state !== "activating") throw new InfraError(`sudo -n systemctl start ${svc} exited 0 but systemctl is-active says ${state}: still out of rotation`);
    lines.push(`started the runner service ${svc}${state ? ` (systemctl is-active: ${state})` : ""}`);
  }
  rmSync(drainPath(o.stateDir), { force: true });
  return { functional, lines };
}

// src/agent/status.ts
var INNER_NPU_LOCK = "/tmp/npu.lock";
function lastRuns(dir, n = 3) {
  if (!existsSync3(dir)) return [];
  const dirs = readdirSync3(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => ({ p: join7(dir, e.name), t: statSync4(join7(dir, e.name)).mtimeMs })).sort((a, b) => b.t - a.t).slice(0, n);
  return dirs.map(({ p }) => {
    try {
      const r = JSON.parse(readFileSync5(join7(p, "report.json"), "utf8"));
      return { dir: p, outcome: r.outcome ?? null, model: r.model?.name ?? null, created_at: r.created_at ?? null };
    } catch {
      return { dir: p, outcome: null, model: null, created_at: null };
    }
  });
}
function accelHolders(m, nodes) {
  const holders = [];
  let unreadable = 0;
  if (!nodes.length) return { holders, unreadable };
  for (const pid of (m.list("/proc") ?? []).filter((n) => /^\d+$/.test(n))) {
    const fds = m.list(`/proc/${pid}/fd`);
    if (!fds) {
      unreadable++;
      continue;
    }
    const hit = fds.map((fd) => m.readlink(`/proc/${pid}/fd/${fd}`)).find((t) => t && nodes.includes(t));
    if (!hit) continue;
    const cmdline = (m.readBytes(`/proc/${pid}/cmdline`)?.toString("utf8") ?? "").replace(/\0/g, " ").trim().slice(0, 120);
    holders.push({ pid: Number(pid), cmdline, node: hit });
  }
  return { holders: holders.sort((a, b) => a.pid - b.pid), unreadable };
}
function versionChanges(before, now) {
  if (!before) return [];
  return ["xrt", "amdxdna", "firmware"].filter((k) => now[k] !== null && before[k] !== null && now[k] !== before[k]).map((k) => ({ what: k, from: before[k], to: now[k] }));
}
var describeChanges = (c) => c.map((x) => `${x.what === "xrt" ? "XRT" : x.what} ${x.from} -> ${x.to}`).join(", ");
function health(lastJob, f) {
  const looks = [];
  if (lastJob) looks.push([new Date(lastJob.finished_at).getTime(), lastJob.device_ok ? "ok" : "failing"]);
  if (f && f.status !== "unknown") looks.push([new Date(f.at).getTime(), f.status === "ok" ? "ok" : "failing"]);
  looks.sort((a, b) => b[0] - a[0]);
  return looks[0]?.[1] ?? "unknown";
}
function status(m, o = {}) {
  const stateDir = o.stateDir ?? defaultStateDir(m);
  const outer = lockState(m);
  const lockViews = [];
  const view = (path, role) => {
    const s = lockState(m, path);
    lockViews.push({ path, role, holder: describeHolder(s), waiters: s.waiters, exists: s.exists });
  };
  if (outer.path) view(outer.path, "whole runs (mlir-air skills: flock -x -w 1800)");
  const inner = npuLockPath({}, m.env.NPU_BLOCK_GATE_INNER_LOCK || INNER_NPU_LOCK) ?? INNER_NPU_LOCK;
  if (inner !== outer.path) view(inner, "each dispatch (mlir-air load_and_run, lit NPU tests)");
  const nodes = accelNodes(m);
  const npus = findNpus(m);
  const npu = npus?.find((n) => n.driver === "amdxdna") ?? npus?.[0] ?? null;
  const { holders, unreadable } = accelHolders(m, nodes.map((n) => n.node));
  const x = runXrtSmi(m, ["examine"], 2e4);
  const xrt = x.missing || x.status !== 0 ? null : parseXrtSmi(x.stdout);
  const p = runXrtSmi(m, ["examine", "-r", "platform"], 2e4);
  const f = lastFunctional(stateDir);
  const versions = { xrt: xrt?.xrt ?? null, amdxdna: driverVersion(m) ?? xrt?.amdxdna ?? null, firmware: npu?.fwVersion ?? xrt?.firmware ?? null };
  const lastJob = readJson(join7(stateDir, STATE_FILES.lastJob));
  const cacheRoot = o.cacheDir ?? defaultCacheRoot(m.env);
  const entries = new KernelStore(cacheRoot).list();
  return {
    root: m.root,
    runner: runnerName(m, o.runnerDir ?? null),
    device: nodes.map((n) => n.node),
    npu: npu ? { bdf: npu.bdf, name: npu.vbnv, driver: npu.driver, generation: npuGeneration(npu, cpuModel(m)) } : null,
    health: health(lastJob, f),
    driver: { loaded: m.exists("/sys/module/amdxdna"), version: driverVersion(m) },
    lock: { path: outer.path, holder: outer.path ? describeHolder(outer) : "off" },
    locks: lockViews,
    accel_holders: holders,
    accel_unreadable: unreadable,
    versions,
    versions_changed: versionChanges(lastJob?.versions, versions),
    last_job: lastJob,
    power_mode: (p.status === 0 ? parsePowerMode(p.stdout) : null) ?? f?.power_mode ?? null,
    platform_profile: m.read("/sys/firmware/acpi/platform_profile")?.trim() || null,
    functional: f ? { at: f.at, status: f.status, detail: f.detail } : null,
    drain: drainStatus(m, stateDir),
    cache: { root: cacheRoot, entries: entries.length, bytes: entries.reduce((n, e) => n + e.bytes, 0) },
    runs: lastRuns(o.runsDir ?? join7(m.cwd, "runs"))
  };
}
function renderStatus(s) {
  const v = s.versions;
  const lines = [
    `runner:    ${s.runner}${s.npu?.generation ? ` (${s.npu.generation})` : ""}; health ${s.health}`,
    `device:    ${s.device.length ? s.device.join(", ") : "none (no /dev/accel: see agent doctor)"}${s.npu ? `  ${s.npu.name ?? "NPU"} [${s.npu.bdf}]${s.npu.driver && s.npu.driver !== "amdxdna" ? ` bound to ${s.npu.driver}` : ""}` : ""}`,
    `driver:    ${s.driver.loaded ? `amdxdna${s.driver.version ? ` ${s.driver.version}` : " (in-tree)"}` : "amdxdna not loaded"}`,
    `versions:  XRT ${v.xrt ?? "?"}, amdxdna ${v.amdxdna ?? "?"}, firmware ${v.firmware ?? "?"}`
  ];
  if (s.versions_changed.length) lines.push(`WARNING:   changed since the last job (${s.last_job?.finished_at ?? "?"}): ${describeChanges(s.versions_changed)}`);
  lines.push(`power:     ${s.power_mode ?? "not exposed (xrt-smi examine -r platform)"}${s.platform_profile ? `; ACPI platform profile ${s.platform_profile}` : ""}`);
  for (const l of s.locks) lines.push(`lock:      ${l.path}: ${l.holder}  (${l.role}; read only)`);
  if (!s.locks.length) lines.push("lock:      off");
  if (s.accel_holders.length) for (const h of s.accel_holders) lines.push(`using NPU: pid ${h.pid} ${h.cmdline}  (${h.node})`);
  else lines.push(`using NPU: nobody${s.accel_unreadable ? ` this user can see (${s.accel_unreadable} processes of other users unreadable)` : ""}`);
  if (s.functional) lines.push(`probe:     ${s.functional.status} at ${s.functional.at}: ${s.functional.detail}`);
  const d = s.drain;
  if (d?.drained) lines.push(`DRAINED:   since ${d.at} (${d.method}; ${d.evidence}): ${d.reason}; undo: npu-block-gate agent undrain`);
  else if (d) lines.push(`NOT DRAINED: ${d.state === "refused" ? "the drain was refused" : d.state === "restarted" ? "the drained service was started again and takes jobs" : d.state === "waiting" ? "the service stops after the current job" : "a service stop is pending, not verified"} (${d.method}, ${d.at}): ${d.evidence}`);
  lines.push(`cache:     ${s.cache.root}: ${s.cache.entries} entr${s.cache.entries === 1 ? "y" : "ies"}, ${formatBytes(s.cache.bytes)}`);
  if (s.runs.length) {
    lines.push("runs:");
    for (const r of s.runs) lines.push(`  ${r.outcome ?? "?"}`.padEnd(9) + `${r.model ?? ""}${r.model ? "  " : ""}${r.dir}`);
  }
  return lines.join("\n") + "\n";
}

// src/agent/cache.ts
function cacheStats(root, maxBytes = DEFAULT_MAX_BYTES) {
  const entries = new KernelStore(root, maxBytes).list().sort((a, b) => b.used - a.used).map((e) => ({ key: e.key, model: e.model, bytes: e.bytes, created_at: e.created_at, last_used: new Date(e.used).toISOString() }));
  return { root, entries, total_bytes: entries.reduce((n, e) => n + e.bytes, 0), max_bytes: maxBytes };
}
function cacheGc(root, maxBytes) {
  const before = new Map(cacheStats(root, maxBytes).entries.map((e) => [e.key, e]));
  const dropped = new KernelStore(root, maxBytes).gc().map((k) => before.get(k)).filter(Boolean);
  const after = cacheStats(root, maxBytes);
  return { root, max_bytes: maxBytes, dropped, kept: after.entries.length, total_bytes: after.total_bytes };
}
var short = (t) => t.replace(/\.\d+Z$/, "Z").replace("T", " ");
function table(rows) {
  const head = ["key", "model", "size", "created", "last used"];
  const cells = rows.map((e) => [e.key.slice(0, 16), e.model, formatBytes(e.bytes), short(e.created_at), short(e.last_used)]);
  const w = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  return [head, ...cells].map((c) => "  " + c.map((x, i) => x.padEnd(w[i])).join("  ").trimEnd());
}
function renderStats(s) {
  const lines = [`kernel cache ${s.root}: ${s.entries.length} entr${s.entries.length === 1 ? "y" : "ies"}, ${formatBytes(s.total_bytes)} of ${formatBytes(s.max_bytes)}`];
  if (s.entries.length) lines.push(...table(s.entries));
  return lines.join("\n") + "\n";
}
function renderGc(g) {
  const lines = [`kernel cache ${g.root}: dropped ${g.dropped.length} (${formatBytes(g.dropped.reduce((n, e) => n + e.bytes, 0))}), kept ${g.kept} (${formatBytes(g.total_bytes)} of ${formatBytes(g.max_bytes)})`];
  if (g.dropped.length) lines.push(...table(g.dropped));
  return lines.join("\n") + "\n";
}

// src/agent/hooks.ts
import { createRequire } from "node:module";
import { existsSync as existsSync5, mkdirSync as mkdirSync2, readdirSync as readdirSync4, readFileSync as readFileSync7, rmSync as rmSync3, statSync as statSync6, writeFileSync, appendFileSync as appendFileSync2 } from "node:fs";
import { tmpdir } from "node:os";
import { basename as basename2, dirname as dirname3, extname, isAbsolute, join as join9, relative, resolve as resolve6 } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

// src/agent/metrics.ts
import { existsSync as existsSync4, readFileSync as readFileSync6, renameSync, rmSync as rmSync2, statSync as statSync5 } from "node:fs";
import { join as join8 } from "node:path";
var JOBS_MAX_BYTES = 1024 * 1024;
var JOBS_MAX_AGE_DAYS = 30;
function appendJob(stateDir, line, o) {
  const path = join8(stateDir, STATE_FILES.jobs);
  const old = join8(stateDir, STATE_FILES.jobsOld);
  const maxBytes = o.maxBytes ?? JOBS_MAX_BYTES;
  const maxAgeMs = (o.maxAgeDays ?? JOBS_MAX_AGE_DAYS) * 864e5;
  let rotated = false;
  let dropped = false;
  if (existsSync4(old) && o.now.getTime() - statSync5(old).mtimeMs > maxAgeMs) {
    rmSync2(old, { force: true });
    dropped = true;
  }
  if (existsSync4(path)) {
    const size = statSync5(path).size;
    let first = null;
    try {
      first = JSON.parse(readFileSync6(path, "utf8").split("\n", 1)[0]).ts ?? null;
    } catch {
    }
    const tooOld = first !== null && o.now.getTime() - new Date(first).getTime() > maxAgeMs;
    if (size + JSON.stringify(line).length + 1 > maxBytes || tooOld) {
      renameSync(path, old);
      rotated = true;
    }
  }
  appendLine(path, line);
  return { rotated, dropped };
}
function countJob(stateDir, outcome) {
  const path = join8(stateDir, STATE_FILES.counters);
  const prev = readJson(path) ?? {};
  const c = Object.fromEntries(JOB_OUTCOMES.map((k) => [k, Number.isFinite(prev[k]) ? prev[k] : 0]));
  c[outcome]++;
  writeJson(path, c);
  return c;
}
var esc = (v) => v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
var labels = (o) => `{${Object.entries(o).map(([k, v]) => `${k}="${esc(v ?? "")}"`).join(",")}}`;
var secs2 = (iso) => iso ? Math.round(new Date(iso).getTime() / 1e3) : NaN;
var num = (v) => v === null || v === void 0 || !Number.isFinite(v) ? NaN : v;
var value = (v) => Number.isNaN(v) ? "NaN" : v === Infinity ? "+Inf" : v === -Infinity ? "-Inf" : String(v);
function renderTextfile(j, counts) {
  const out = [];
  const runner = { runner: j.runner };
  const metric = (name, help, type, rows) => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [l, v] of rows) out.push(`${name}${labels({ ...runner, ...l })} ${value(v)}`);
  };
  metric("npu_block_gate_healthy", "The NPU passed the device-level checks after the last job (1) or not (0).", "gauge", [[{}, j.device_ok ? 1 : 0]]);
  metric("npu_block_gate_last_check_timestamp_seconds", "When the job-completed hook last checked the NPU.", "gauge", [[{}, secs2(j.ts)]]);
  metric(
    "npu_block_gate_functional_ok",
    "The last functional probe (xrt-smi validate) passed (1), failed on the NPU (0), or did not test it (NaN).",
    "gauge",
    [[{}, !j.functional || j.functional.status === "unknown" ? NaN : j.functional.status === "ok" ? 1 : 0]]
  );
  metric("npu_block_gate_functional_timestamp_seconds", "When the last functional probe ran (NaN: never).", "gauge", [[{}, secs2(j.functional?.at)]]);
  metric("npu_block_gate_last_job_timestamp_seconds", "When the last job ended (its job-completed hook).", "gauge", [[{}, secs2(j.ts)]]);
  metric("npu_block_gate_last_job_duration_seconds", "Wall time of the last job, job-started to job-completed hook (NaN: unknown).", "gauge", [[{}, num(j.duration_s)]]);
  metric("npu_block_gate_last_job_run_id", "The last job's GitHub run id (GITHUB_RUN_ID; NaN: none).", "gauge", [[{}, j.run_id && /^\d+$/.test(j.run_id) ? Number(j.run_id) : NaN]]);
  metric(
    "npu_block_gate_last_job_outcome",
    "The last job's outcome: 1 for it, 0 for the others (ok, refused, device_failed).",
    "gauge",
    JOB_OUTCOMES.map((k) => [{ outcome: k }, j.outcome === k ? 1 : 0])
  );
  metric("npu_block_gate_jobs_total", "Jobs seen by the job-completed hook, by outcome.", "counter", JOB_OUTCOMES.map((k) => [{ outcome: k }, counts[k] ?? 0]));
  metric("npu_block_gate_versions_info", "XRT, amdxdna and NPU firmware versions at the last job.", "gauge", [[{ xrt: j.versions.xrt, amdxdna: j.versions.amdxdna, firmware: j.versions.firmware }, 1]]);
  metric("npu_block_gate_drained", "The runner is out of rotation, verified (labels read back gone, or the service stopped).", "gauge", [[{}, j.drained ? 1 : 0]]);
  metric("npu_block_gate_drain_pending", "A service stop is scheduled and not yet verified (agent status verifies it).", "gauge", [[{}, j.drain_pending ? 1 : 0]]);
  return out.join("\n") + "\n";
}
function writeTextfile(path, j, counts) {
  writeAtomic2(path, renderTextfile(j, counts));
}

// src/agent/hooks.ts
var FORK_POLICIES = ["allow", "probe-only", "deny"];
var DEFAULT_FORK_POLICY = "probe-only";
var DEFAULT_WHEN_UNKNOWN = "refuse";
var HOOK_VARS = { "job-started": "ACTIONS_RUNNER_HOOK_JOB_STARTED", "job-completed": "ACTIONS_RUNNER_HOOK_JOB_COMPLETED" };
var LOG_DAYS = 14;
var MARKER = "written by `npu-block-gate agent hooks install`";
function selfCommand() {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith(".ts")) {
    let loader = [];
    try {
      const pkg = createRequire(import.meta.url).resolve("tsx/package.json");
      loader = ["--import", pathToFileURL(join9(dirname3(pkg), "dist", "loader.mjs")).href];
    } catch {
    }
    return { node: process.execPath, execArgv: loader, script: resolve6(dirname3(here), "..", "cli.ts"), kind: "source" };
  }
  for (const dir of [dirname3(here), dirname3(dirname3(here))]) {
    for (const entry of ["hook.js", "cli.js"]) if (existsSync5(join9(dir, entry))) return { node: process.execPath, execArgv: [], script: join9(dir, entry), kind: "bundle" };
  }
  return { node: process.execPath, execArgv: [], script: here, kind: "bundle" };
}
var BUNDLE_IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|^import\s*)["'](\.{1,2}\/[^"'\n]+?\.js)["']/gm;
function bundleFiles(entry, onDemand = true) {
  const base = dirname3(entry);
  const files = [basename2(entry)];
  for (let i = 0; i < files.length; i++) {
    const from = join9(base, files[i]);
    for (const m of readFileSync7(from, "utf8").matchAll(BUNDLE_IMPORT)) {
      if (!onDemand && m[0].includes("(")) continue;
      const rel = relative(base, join9(dirname3(from), m[1]));
      if (rel.startsWith("..") || isAbsolute(rel) || files.includes(rel) || !existsSync5(join9(base, rel))) continue;
      files.push(rel);
    }
  }
  return files;
}
function unstableReason(path, env = process.env) {
  const p = resolve6(path).replace(/\\/g, "/");
  if (/\/_npx\//.test(p)) return "an npx cache, which npm prunes";
  const cache = env.npm_config_cache ? resolve6(env.npm_config_cache).replace(/\\/g, "/") : null;
  if (cache && p.startsWith(cache + "/") || /\/\.npm\//.test(p)) return "the npm cache";
  if (/\/(\.cache\/pnpm|pnpm\/dlx|\.bun\/install\/cache|\.yarn\/berry\/cache)\//.test(p)) return "a package manager cache";
  if (/\/_work\/(_actions|_temp|_tool)\//.test(p)) return "the runner's work folder, which the runner replaces or cleans";
  const tmp = resolve6(tmpdir()).replace(/\\/g, "/");
  if (p.startsWith(tmp + "/") || /^\/(tmp|var\/tmp)\//.test(p)) return "a temp dir";
  return null;
}
function installCli(self, dir, env) {
  const nodeWhy = unstableReason(self.node, env);
  if (nodeWhy) throw new InputError(`is under ${nodeWhy}: the hooks need a node that stays (install Node.js system-wide, then run hooks install with it)`, `node ${self.node}`);
  if (self.kind === "source") {
    const why3 = unstableReason(self.script, env);
    if (why3) throw new InputError(`is under ${why3}, so every job would break once it goes: install npu-block-gate where it stays (npm install -g npu-block-gate, or a git checkout) and run hooks install from there`, self.script);
    return { argv: [self.node, ...self.execArgv, self.script], line: `hooks run the CLI in place: ${self.script} (a source checkout: keep it there)` };
  }
  let files;
  try {
    files = bundleFiles(self.script).map((rel) => ({ rel, bytes: readFileSync7(join9(dirname3(self.script), rel)) }));
  } catch (e) {
    throw new InputError(`cannot read the CLI to copy it (${oneLine(e)})`, self.script);
  }
  const h = process.getBuiltinModule("node:crypto").createHash("sha256");
  for (const f of files) h.update(f.rel).update("\0").update(f.bytes).update("\0");
  const hash = h.digest("hex").slice(0, 12);
  const root = join9(dir, "cli");
  const copy = join9(root, hash);
  const dest = join9(copy, files[0].rel);
  const pkg = join9(copy, "package.json");
  const pkgText = JSON.stringify({ type: "module", private: true, description: "the copy of npu-block-gate the runner hooks run" }) + "\n";
  const same = (f) => {
    try {
      return readFileSync7(join9(copy, f.rel)).equals(f.bytes);
    } catch {
      return false;
    }
  };
  let line = `unchanged copy of the CLI ${dest}`;
  if (!existsSync5(pkg) || !files.every(same)) {
    mkdirSync2(copy, { recursive: true });
    writeFileSync(pkg, pkgText);
    for (const f of [...files.slice(1), files[0]]) {
      const to = join9(copy, f.rel);
      mkdirSync2(dirname3(to), { recursive: true });
      writeAtomic(to, f.bytes, { mode: f === files[0] ? 493 : 420, follow: false });
    }
    const chunks = files.length > 1 ? ` and the ${files.length - 1} chunk(s) it loads` : "";
    line = `installed a copy of the CLI ${dest}${chunks} (from ${self.script}; the hooks no longer depend on where that lives)`;
  }
  for (const old of readdirSync4(root)) if (old !== hash) rmSync3(join9(root, old), { recursive: true, force: true });
  return { argv: [self.node, ...self.execArgv, dest], line };
}
var defaultHooksDir = (m) => join9(m.home(), ".npu-block-gate", "hooks");
var sq = (s) => /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
function chainCommand(path, node) {
  switch (extname(path)) {
    case ".sh":
      return `if command -v bash >/dev/null 2>&1; then bash --noprofile --norc -e -o pipefail ${sq(path)}; else sh -e ${sq(path)}; fi`;
    case ".js":
      return `${sq(node)} ${sq(path)}`;
    case ".ps1":
      return `pwsh -command ${sq(`. '${path.replace(/'/g, "''")}'`)}`;
    default:
      throw new InputError("the runner only runs hooks ending in .sh, .ps1 or .js, so there is nothing to chain to", path);
  }
}
function hookScript(o) {
  const lines = ["#!/bin/sh", `# ${o.name} hook of the GitHub Actions runner, ${MARKER}.`];
  if (Object.keys(o.env).length) {
    lines.push("# The runner starts hooks without the job's env:, so what the checks need is set here.");
    for (const [k, v] of Object.entries(o.env)) lines.push(`${k}=${sq(v)}; export ${k}`);
  }
  const ours = [...o.argv, "agent", "hook", o.name, ...o.hookArgs].map(sq).join(" ");
  if (o.chain) {
    const run = chainCommand(o.chain, o.argv[0]);
    lines.push(`# npu-block-gate-chain: ${o.chain}`, "# The hook this runner had before runs first and keeps its say: its failure fails the job, as before.");
    if (o.name === "job-started") lines.push(`${run} || exit $?`, `exec ${ours}`);
    else lines.push("status=0", `${run} || status=$?`, `${ours} || exit $?`, "exit $status");
  } else {
    lines.push(`exec ${ours}`);
  }
  return lines.join("\n") + "\n";
}
function shimChain(path) {
  let text;
  try {
    text = readFileSync7(path, "utf8");
  } catch {
    return void 0;
  }
  if (!text.includes(MARKER)) return void 0;
  return /^# npu-block-gate-chain: (.+)$/m.exec(text)?.[1] ?? null;
}
function writeAtomic3(path, text, mode) {
  try {
    if (readFileSync7(path, "utf8") === text && (statSync6(path).mode & 511) === mode) return false;
  } catch {
  }
  writeAtomic(path, text, { mode, follow: false });
  return true;
}
function envValue(text, key) {
  let v = null;
  for (const line of text.split(/\r?\n/)) if (line.startsWith(`${key}=`)) v = line.slice(key.length + 1).trim();
  return v || null;
}
function updateEnv(text, lines) {
  const parts = text.length ? text.split(/(?<=\n)/) : [];
  const seen = /* @__PURE__ */ new Set();
  const out = [];
  for (const p of parts) {
    const key = Object.keys(lines).find((k) => p.startsWith(`${k}=`));
    if (!key) {
      out.push(p);
      continue;
    }
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(`${key}=${lines[key]}${p.endsWith("\r\n") ? "\r\n" : "\n"}`);
  }
  const missing = Object.keys(lines).filter((k) => !seen.has(k));
  if (missing.length && out.length && !out[out.length - 1].endsWith("\n")) out[out.length - 1] += "\n";
  for (const k of missing) out.push(`${k}=${lines[k]}
`);
  return out.join("");
}
function installHooks(o) {
  const dir = resolve6(o.dir);
  const runner = o.runnerDir ? resolve6(o.runnerDir) : null;
  if (runner && !existsSync5(runner)) throw new InputError("no such directory", `--runner-dir ${runner}`);
  if (o.python && o.python.includes("/") && !existsSync5(o.python)) throw new InputError("no such file", `--python ${o.python}`);
  if (o.hfHome && !existsSync5(o.hfHome)) throw new InputError("no such directory (the HF cache the jobs use, e.g. ~/.cache/huggingface)", `--hf-home ${o.hfHome}`);
  if (o.tokenFile) readTokenFile(o.tokenFile);
  if (o.labels.length && !o.tokenFile) throw new InputError("labels are removed through the GitHub API: pass --token-file too", "--label");
  if (o.drainOnFailure && !runner) throw new InputError("needs --runner-dir (its .runner names the runner; its .service the service to stop)", "--drain-on-failure");
  mkdirSync2(dir, { recursive: true });
  const report = [];
  const paths = { "job-started": join9(dir, "job-started.sh"), "job-completed": join9(dir, "job-completed.sh") };
  const envPath = runner ? join9(runner, ".env") : null;
  let envText = "";
  let envMode = 420;
  if (envPath) {
    try {
      envText = readFileSync7(envPath, "utf8");
      envMode = statSync6(envPath).mode & 511;
    } catch {
    }
  }
  const chains = { "job-started": null, "job-completed": null };
  for (const name of Object.keys(paths)) {
    let chain = shimChain(paths[name]) ?? null;
    const existing = envPath ? envValue(envText, HOOK_VARS[name]) : null;
    if (existing && resolve6(existing) !== paths[name]) {
      const theirs = shimChain(existing);
      if (theirs !== void 0) {
        chain = theirs;
        report.push(`replacing the npu-block-gate ${name} hook ${existing}`);
      } else if (!o.chain) {
        throw new InputError(`${HOOK_VARS[name]}=${existing} is another hook the runner runs ${name === "job-started" ? "before" : "after"} every job: pass --chain to keep it running (first, with its exit status kept), or take that line out of .env yourself`, envPath);
      } else {
        if (!existsSync5(existing)) throw new InputError(`${HOOK_VARS[name]}=${existing} does not exist, so it cannot be chained (the runner would fail every job on it now)`, envPath);
        chain = existing;
      }
    }
    if (chain) chainCommand(chain, o.self.node);
    chains[name] = chain;
  }
  const cli = installCli(o.self, dir, o.env);
  report.push(cli.line);
  const shimEnv = {};
  if (o.hfHome) shimEnv.HF_HOME = resolve6(o.hfHome);
  if (o.offline) shimEnv.HF_HUB_OFFLINE = "1";
  const common = [...o.stateDir ? ["--state-dir", resolve6(o.stateDir)] : [], ...runner ? ["--runner-dir", runner] : []];
  const args = {
    "job-started": [
      "--fork-policy",
      o.forkPolicy,
      ...o.python ? ["--python", o.python] : [],
      ...o.functionalWhen ? ["--functional-when", o.functionalWhen] : [],
      ...common,
      ...o.functionalMaxAge ? ["--functional-max-age", o.functionalMaxAge] : [],
      ...o.whenUnknown ? ["--when-unknown", o.whenUnknown] : []
    ],
    "job-completed": [
      "--dir",
      dir,
      ...o.cacheMaxBytes ? ["--cache-max-bytes", o.cacheMaxBytes] : [],
      ...common,
      ...o.functionalMaxAge ? ["--functional-max-age", o.functionalMaxAge] : [],
      ...o.drainOnFailure ? ["--drain-on-failure"] : [],
      ...o.tokenFile ? ["--token-file", resolve6(o.tokenFile)] : [],
      ...o.labels.flatMap((l) => ["--label", l]),
      ...o.apiUrl ? ["--api-url", o.apiUrl] : [],
      ...o.textfile ? ["--textfile", resolve6(o.textfile)] : []
    ]
  };
  for (const name of ["job-started", "job-completed"]) {
    const changed = writeAtomic3(paths[name], hookScript({ name, argv: cli.argv, hookArgs: args[name], env: shimEnv, chain: chains[name] }), 493);
    report.push(`${changed ? "wrote    " : "unchanged"} ${paths[name]}${chains[name] ? ` (runs ${chains[name]} first)` : ""}`);
  }
  const lines = { [HOOK_VARS["job-started"]]: paths["job-started"], [HOOK_VARS["job-completed"]]: paths["job-completed"] };
  if (envPath) {
    const next = updateEnv(envText, lines);
    const changed = next !== envText && writeAtomic3(envPath, next, envMode);
    report.push(`${changed ? "updated  " : "unchanged"} ${envPath} (${Object.keys(lines).join(", ")})`);
    if (changed) report.push("restart the runner service (sudo ./svc.sh stop && sudo ./svc.sh start) so it reads .env");
  } else {
    report.push(`add these lines to the runner's .env (in its install dir), then restart the runner (if .env already names a hook, run this again with --runner-dir and --chain instead, so that hook keeps running):`);
    for (const [k, v] of Object.entries(lines)) report.push(`  ${k}=${v}`);
  }
  return report.join("\n") + "\n";
}
function forkVerdict(env, policy) {
  if (policy === "allow") return null;
  const p = env.GITHUB_EVENT_PATH;
  if (!p) return null;
  let ev;
  try {
    ev = JSON.parse(readFileSync7(p, "utf8"));
  } catch (e) {
    return `npu-block-gate: fork policy ${policy}: cannot read the job's event ${p} (${oneLine(e)}); refusing to run`;
  }
  const pr = ev?.pull_request;
  if (!pr) return null;
  const head = pr.head?.repo?.full_name ?? null;
  const base = pr.base?.repo?.full_name ?? null;
  if (head && base && head === base) return null;
  const from = `pull request from ${head ?? "a deleted fork"} into ${base ?? "this repository"}`;
  const event = env.GITHUB_EVENT_NAME ?? null;
  if (policy === "probe-only") {
    if (event === "pull_request") return null;
    return `npu-block-gate: fork policy probe-only: ${from} under ${event ?? "an unknown event"} would run its code with this repository's secrets or a write token; only pull_request (read-only token, no secrets: the split workflow's probe job) may run fork code here; refusing the job`;
  }
  return `npu-block-gate: fork policy deny: ${from} runs untrusted code on this runner's NPU; refusing the job`;
}
var escData = (s) => s.replace(/%/g, "%25").replace(/\r/g, "%0D").replace(/\n/g, "%0A");
var escProp = (s) => escData(s).replace(/:/g, "%3A").replace(/,/g, "%2C");
function annotation(kind, title, message) {
  return `::${kind} title=${escProp(title)}::${escData(message)}
`;
}
var checkNote = (c) => `${c.status}: ${c.detail}${c.fix ? ` (fix: ${c.fix})` : ""}`;
function untestable(checks) {
  const k = checks.find((c) => c.id === "kernel-log");
  const f = checks.find((c) => c.id === "functional");
  if (!k || k.scope !== "device" || k.status !== "warn") return null;
  if (f && (f.scope === "device" || f.status === "ok")) return null;
  return `the kernel log shows a warning (${k.detail}) and the functional probe could not test the NPU (${f ? f.detail : "it did not run"})`;
}
async function jobStarted(m, o) {
  const draining = drainStatus(m, o.stateDir);
  if (draining && !draining.drained && (draining.state === "pending" || draining.state === "waiting")) {
    const why4 = `npu-block-gate: job-started hook: this runner is being drained (${draining.state === "waiting" ? "its service stops after the running job" : "a service stop is scheduled"}: ${draining.reason}); refusing the job so the stop does not kill it (npu-block-gate agent undrain cancels the drain)`;
    const e2 = m.env;
    const job2 = { started_at: m.now().toISOString(), repository: e2.GITHUB_REPOSITORY ?? null, run_id: e2.GITHUB_RUN_ID ?? null, job: e2.GITHUB_JOB ?? null, versions: { xrt: null, amdxdna: null, firmware: null }, refused: `drain ${draining.state}` };
    try {
      writeJson(join9(o.stateDir, STATE_FILES.job), job2, { durable: false });
    } catch {
    }
    return { code: 1, out: annotation("error", "npu-block-gate: drain in progress", why4) + why4 + "\n" };
  }
  const rep = await doctorReport(m, { ...o, functional: o.functional ?? "auto" });
  let out = renderChecks(rep.checks, m.root);
  const fails = deviceFailures(rep.checks);
  let warnings = 0;
  for (const c of rep.checks) {
    if (c.status === "ok" || fails.includes(c)) continue;
    out += annotation("warning", `npu-block-gate: ${c.id}`, checkNote(c));
    warnings++;
  }
  const last = readJson(join9(o.stateDir, STATE_FILES.lastJob));
  const changes = versionChanges(last?.versions, rep.facts.versions);
  if (changes.length) {
    out += annotation("warning", "npu-block-gate: versions changed", `since the last job (${last.finished_at}): ${describeChanges(changes)}; a result that differs from before may come from this`);
    warnings++;
  }
  const e = m.env;
  const job = {
    started_at: m.now().toISOString(),
    repository: e.GITHUB_REPOSITORY ?? null,
    run_id: e.GITHUB_RUN_ID ?? null,
    job: e.GITHUB_JOB ?? null,
    versions: rep.facts.versions,
    refused: null
  };
  const save = () => {
    try {
      writeJson(join9(o.stateDir, STATE_FILES.job), job, { durable: false });
    } catch {
    }
  };
  if (fails.length) {
    for (const c of fails) out += annotation("error", `npu-block-gate: ${c.id}`, checkNote(c));
    job.refused = `device: ${fails.map((c) => c.id).join(", ")}`;
    save();
    return { code: 1, out: out + `npu-block-gate: job-started hook: the NPU is not usable (${fails.map((c) => c.id).join(", ")}); failing the job before it runs
` };
  }
  const blind = (o.whenUnknown ?? DEFAULT_WHEN_UNKNOWN) === "refuse" ? untestable(rep.checks) : null;
  if (blind) {
    const msg = `${blind}; --when-unknown refuse: nothing can vouch for the NPU, refusing the job (fix the probe's host problem, or hooks install --when-unknown run to run such jobs with warnings)`;
    out += annotation("error", "npu-block-gate: untestable NPU", msg);
    job.refused = "untestable: kernel-log warning, probe could not run";
    save();
    return { code: 1, out: out + `npu-block-gate: job-started hook: ${msg}
` };
  }
  const why3 = forkVerdict(m.env, o.forkPolicy);
  if (why3) {
    job.refused = `fork policy ${o.forkPolicy}`;
    save();
    return { code: 1, out: out + annotation("error", "npu-block-gate: fork policy", why3) + why3 + "\n" };
  }
  save();
  out += `npu-block-gate: job-started hook: NPU usable${warnings ? `, ${warnings} warning(s) on the job` : ""}; fork policy ${o.forkPolicy}: ok
`;
  return { code: 0, out };
}
var day = (d) => d.toISOString().slice(0, 10);
var WORKER_LOG_TAIL = 4 * 1024 ** 2;
function jobFailed(m, runnerDir) {
  const diag = join9(resolve6(runnerDir), "_diag");
  let names;
  try {
    names = readdirSync4(diag).filter((n) => /^Worker_.*\.log$/.test(n)).sort();
  } catch {
    return null;
  }
  const newest = names[names.length - 1];
  if (!newest) return null;
  let text;
  try {
    const buf = readFileSync7(join9(diag, newest));
    text = buf.subarray(Math.max(0, buf.length - WORKER_LOG_TAIL)).toString("utf8");
  } catch {
    return null;
  }
  const line = text.split("\n").reverse().find((l) => /\bStep result: Failed\b/.test(l));
  return line ? `${newest}: ${line.trim().slice(0, 200)}` : null;
}
async function recordDiagnostics(m, dir, bdf = null) {
  const logs = join9(resolve6(dir), "logs");
  mkdirSync2(logs, { recursive: true });
  const now = m.now();
  const e = m.env;
  const parts = [`=== job-completed ${now.toISOString()}${e.GITHUB_REPOSITORY ? ` ${e.GITHUB_REPOSITORY}` : ""}${e.GITHUB_RUN_ID ? ` run ${e.GITHUB_RUN_ID}` : ""}${e.GITHUB_JOB ? ` job ${e.GITHUB_JOB}` : ""} ===`];
  const k = await readKernelLog(m, { bdf, sinceHours: 1 });
  if ("error" in k) parts.push(`--- kernel log: ${k.error}`);
  else {
    parts.push(`--- kernel log, NPU lines (${k.source}; ${readNote(k)}): ${k.lines.length}`);
    for (const l of k.lines) parts.push(l);
  }
  const x = runXrtSmi(m);
  if (x.missing) parts.push("--- xrt-smi examine: not found");
  else parts.push(`--- xrt-smi examine (exit ${x.status ?? x.error})`, (x.stdout + x.stderr).trimEnd());
  const log = join9(logs, `${day(now)}.log`);
  appendFileSync2(log, parts.join("\n") + "\n");
  const oldest = day(new Date(now.getTime() - (LOG_DAYS - 1) * 864e5));
  const pruned = [];
  for (const n of readdirSync4(logs)) {
    const m2 = /^(\d{4}-\d{2}-\d{2})\.log$/.exec(n);
    if (m2 && m2[1] < oldest) {
      rmSync3(join9(logs, n), { force: true });
      pruned.push(n);
    }
  }
  return { log, pruned };
}
async function jobCompleted(m, o) {
  let out = "";
  const say = (s) => {
    out += s.endsWith("\n") ? s : s + "\n";
  };
  const service = serviceName(o.runnerDir);
  const failedStep = o.runnerDir && (o.functional ?? "auto") !== "never" ? jobFailed(m, o.runnerDir) : null;
  const rep = await doctorReport(m, {
    deviceOnly: true,
    stateDir: o.stateDir,
    functional: failedStep ? "always" : o.functional ?? "auto",
    service,
    functionalMaxAgeS: o.functionalMaxAgeS,
    functionalTimeoutS: o.functionalTimeoutS,
    functionalTest: o.functionalTest,
    recentPassVouches: !failedStep
  });
  if (failedStep) say(`npu-block-gate: the job failed (${failedStep}): the functional probe ran before recording the device`);
  const fails = deviceFailures(rep.checks);
  try {
    const d = await recordDiagnostics(m, o.dir, rep.facts.npu?.bdf ?? null);
    say(`npu-block-gate: diagnostics appended to ${d.log}${d.pruned.length ? ` (dropped ${d.pruned.length} log(s) older than ${LOG_DAYS} days)` : ""}`);
  } catch (e) {
    say(`npu-block-gate: diagnostics not recorded: ${oneLine(e)}`);
  }
  for (const c of fails) say(annotation("error", `npu-block-gate: ${c.id} after the job`, checkNote(c)));
  for (const c of rep.checks.filter((x) => x.scope === "host" && x.status !== "ok" && x.id.startsWith("functional"))) say(annotation("warning", `npu-block-gate: ${c.id}`, checkNote(c)));
  try {
    if (fails.length && o.drainOnFailure && o.runnerDir) {
      const r = await drain(m, {
        runnerDir: o.runnerDir,
        tokenFile: o.tokenFile,
        labels: o.labels,
        apiUrl: o.apiUrl,
        stateDir: o.stateDir,
        reason: `hardware failure after ${m.env.GITHUB_REPOSITORY ?? "a job"}${m.env.GITHUB_RUN_ID ? ` run ${m.env.GITHUB_RUN_ID}` : ""}: ${fails.map((c) => `${c.id}: ${c.detail}`).join("; ")}`,
        fromHook: true,
        stopDelayS: o.stopDelayS
      });
      for (const l of r.lines) say(`npu-block-gate: drain: ${l}`);
      say(annotation("warning", r.record.state === "drained" ? "npu-block-gate: runner drained" : "npu-block-gate: runner drain pending", `${r.lines.join("; ")}; after the fix: npu-block-gate agent undrain`));
    } else if (fails.length) {
      say(`npu-block-gate: the NPU failed device checks after this job (${fails.map((c) => c.id).join(", ")}); not drained (hooks install --drain-on-failure does that)`);
    } else {
      const line = finishPendingDrain(m, o.stateDir, o.stopDelayS);
      if (line) say(`npu-block-gate: drain: ${line}`);
    }
  } catch (e) {
    say(annotation("error", "npu-block-gate: drain refused: not drained", oneLine(e)));
  }
  try {
    const now = m.now();
    const job = readJson(join9(o.stateDir, STATE_FILES.job));
    const started = job ? new Date(job.started_at) : null;
    const f = lastFunctional(o.stateDir);
    const drainNow = drainStatus(m, o.stateDir);
    const outcome = job?.refused ? "refused" : fails.length ? "device_failed" : "ok";
    const line = {
      ts: now.toISOString(),
      runner: runnerName(m, o.runnerDir),
      repository: m.env.GITHUB_REPOSITORY ?? job?.repository ?? null,
      run_id: m.env.GITHUB_RUN_ID ?? job?.run_id ?? null,
      job: m.env.GITHUB_JOB ?? job?.job ?? null,
      started_at: job?.started_at ?? null,
      duration_s: started ? Math.round((now.getTime() - started.getTime()) / 100) / 10 : null,
      outcome,
      refused: job?.refused ?? null,
      device_ok: !fails.length,
      failing: fails.map((c) => c.id),
      versions: rep.facts.versions,
      functional: f ? { at: f.at, status: f.status, finding: f.finding ?? (f.status === "ok" ? "pass" : "device") } : null,
      drained: !!drainNow?.drained,
      drain_pending: !!drainNow && !drainNow.drained && (drainNow.state === "pending" || drainNow.state === "waiting")
    };
    const rot = appendJob(o.stateDir, line, { now, maxBytes: o.jobsMaxBytes, maxAgeDays: o.jobsMaxAgeDays });
    const counts = countJob(o.stateDir, outcome);
    const textfile = o.textfile ?? join9(o.stateDir, STATE_FILES.textfile);
    writeTextfile(textfile, line, counts);
    const last = { finished_at: line.ts, versions: rep.facts.versions, device_ok: line.device_ok, outcome, run_id: line.run_id };
    writeJson(join9(o.stateDir, STATE_FILES.lastJob), last);
    rmSync3(join9(o.stateDir, STATE_FILES.job), { force: true });
    say(`npu-block-gate: job recorded in ${join9(o.stateDir, STATE_FILES.jobs)}${rot.rotated ? " (rotated the previous lines to jobs.ndjson.1)" : ""}; metrics in ${textfile}`);
  } catch (e) {
    say(`npu-block-gate: metrics not recorded: ${oneLine(e)}`);
  }
  out += renderGc(cacheGc(o.cacheDir ?? defaultCacheRoot(m.env), o.maxBytes));
  return { code: 0, out };
}

// src/agent/setup.ts
import { closeSync, constants as constants2, fchmodSync, fchownSync, fstatSync, lstatSync, mkdirSync as mkdirSync3, openSync, readdirSync as readdirSync5, readFileSync as readFileSync8, realpathSync } from "node:fs";
import { dirname as dirname4, isAbsolute as isAbsolute2, join as join10, resolve as resolve7 } from "node:path";
var DEFAULT_PROBE_USER = "npu-probe";
var PROBE_GROUP = "npu-block-gate";
var SUDOERS_FILE = "/etc/sudoers.d/npu-block-gate";
var DRAIN_SUDOERS_FILE = "/etc/sudoers.d/npu-block-gate-drain";
var ACCEL_NODE = "/dev/accel/accel0";
var PRIVILEGED_GROUPS = ["root", "sudo", "wheel", "admin", "docker", "lxd", "libvirt", "disk", "shadow"];
function onInode(path, owner, fn) {
  const fd = openSync(path, constants2.O_RDONLY | constants2.O_NOFOLLOW | constants2.O_NONBLOCK);
  try {
    const s = fstatSync(fd);
    if (!s.isFile() && !s.isDirectory() || s.uid !== owner) throw new InfraError("changed while setup ran (its owner or type); nothing done to it, run setup again", path);
    fn(fd);
  } finally {
    closeSync(fd);
  }
}
var realSetupFs = {
  lstat: (p) => {
    try {
      const s = lstatSync(p);
      return { uid: s.uid, gid: s.gid, mode: s.mode & 4095, kind: s.isSymbolicLink() ? "link" : s.isDirectory() ? "dir" : s.isFile() ? "file" : "other" };
    } catch {
      return null;
    }
  },
  readdir: (p) => {
    try {
      return readdirSync5(p).sort();
    } catch {
      return null;
    }
  },
  chmod: (p, mode, owner) => onInode(p, owner, (fd) => fchmodSync(fd, mode)),
  chown: (p, uid, gid, owner) => onInode(p, owner, (fd) => fchownSync(fd, uid, gid))
};
function parsePasswdLine(l) {
  const f = l.split(":");
  if (f.length < 7 || !f[0] || f[0].startsWith("#")) return null;
  const uid = Number(f[2]);
  const gid = Number(f[3]);
  if (!Number.isInteger(uid) || !Number.isInteger(gid)) return null;
  return { name: f[0], uid, gid, home: f[5], shell: f[6].trim() };
}
function parseGroupLine(l) {
  const f = l.split(":");
  if (f.length < 4 || !f[0] || f[0].startsWith("#")) return null;
  const gid = Number(f[2]);
  if (!Number.isInteger(gid)) return null;
  return { name: f[0], gid, members: f[3].trim().split(",").map((s) => s.trim()).filter(Boolean) };
}
var Db = class {
  constructor(m) {
    this.m = m;
  }
  m;
  lines(file) {
    return (this.m.read(file) ?? "").split(/\r?\n/);
  }
  getent(db, key) {
    if (this.m.root !== "/") return null;
    const r = this.m.run("getent", [db, key], 5e3);
    return r.status === 0 ? r.stdout.split("\n")[0] : null;
  }
  user(name) {
    for (const l of this.lines("/etc/passwd")) {
      const a = parsePasswdLine(l);
      if (a?.name === name) return a;
    }
    const e = this.getent("passwd", name);
    return e ? parsePasswdLine(e) : null;
  }
  group(name) {
    for (const l of this.lines("/etc/group")) {
      const g = parseGroupLine(l);
      if (g?.name === name) return g;
    }
    const e = this.getent("group", name);
    return e ? parseGroupLine(e) : null;
  }
  groupByGid(gid) {
    for (const l of this.lines("/etc/group")) {
      const g = parseGroupLine(l);
      if (g?.gid === gid) return g;
    }
    const e = this.getent("group", String(gid));
    return e ? parseGroupLine(e) : null;
  }
  /** The gids a user's processes get (primary + supplementary, as initgroups sees /etc/group). */
  gidsOf(a) {
    const out = /* @__PURE__ */ new Set([a.gid]);
    for (const l of this.lines("/etc/group")) {
      const g = parseGroupLine(l);
      if (g?.members.includes(a.name)) out.add(g.gid);
    }
    return [...out];
  }
  inGroup(a, g) {
    return a.gid === g.gid || g.members.includes(a.name);
  }
};
var octal = (n) => n.toString(8).padStart(4, "0");
var plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
function why2(r) {
  return oneLine(r.error ?? (`${r.stderr}
${r.stdout}`.trim().split("\n").pop() || `exit ${r.status}`));
}
function runSbin(m, cmd, args, timeoutMs) {
  const r = m.run(cmd, args, timeoutMs);
  if (!r.missing) return r;
  for (const d of ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]) if (m.exists(`${d}/${cmd}`)) return m.run(m.path(`${d}/${cmd}`), args, timeoutMs);
  return r;
}
function mustRun(m, cmd, args, pkg) {
  const r = runSbin(m, cmd, args, 6e4);
  const line = `${cmd} ${args.join(" ")}`;
  if (r.missing) throw new InfraError(`${cmd} not found (install ${pkg}): could not run ${line}`);
  if (r.status !== 0) throw new InfraError(`${line} failed: ${why2(r)}`);
  return r;
}
function realOr(p) {
  try {
    return realpathSync(p);
  } catch {
    return resolve7(p);
  }
}
function readPlain(p) {
  try {
    return readFileSync8(p, "utf8");
  } catch {
    return null;
  }
}
function workFolder(runnerDir) {
  try {
    const j = JSON.parse((readPlain(join10(runnerDir, ".runner")) ?? "").replace(/^\uFEFF/, ""));
    if (typeof j.workFolder === "string" && j.workFolder.trim()) return j.workFolder.trim();
  } catch {
  }
  return "_work";
}
function writeAtomic4(path, text, mode, validate) {
  writeAtomic(path, text, { mode, validate, follow: false });
}
var Run = class {
  constructor(onStep) {
    this.onStep = onStep;
  }
  onStep;
  steps = [];
  add(id, status2, detail, fix = null) {
    const s = { id, status: status2, detail, fix };
    this.steps.push(s);
    this.onStep?.(s);
    return s;
  }
};
function resolveInputs(m, fs, db, o, uid) {
  const probeName = o.user ?? DEFAULT_PROBE_USER;
  if (!isUserName(probeName)) throw new InputError(`--user ${JSON.stringify(probeName)}: not a user name (lower case letters, digits, _ and -, at most 32)`);
  const sudoUser = uid === 0 && m.env.SUDO_USER && m.env.SUDO_USER !== "root" ? m.env.SUDO_USER : null;
  const runnerName2 = o.runnerUser ?? sudoUser ?? m.user();
  if (!isUserName(runnerName2)) throw new InputError(`--runner-user ${JSON.stringify(runnerName2)}: not a user name (lower case letters, digits, _ and -, at most 32)`);
  if (runnerName2 === probeName) throw new InputError(`the probe user must not be the runner user (${runnerName2}): pass another --user`);
  const runner = db.user(runnerName2);
  if (!runner) throw new InputError(`no user ${runnerName2} (the user the runner service runs as): pass --runner-user`, m.path("/etc/passwd"));
  let runnerDir = o.runnerDir ? resolve7(o.runnerDir) : null;
  if (!runnerDir && !o.workDir) {
    const guess = join10(runner.home, "actions-runner");
    if (readPlain(join10(guess, ".runner")) !== null) runnerDir = guess;
    else throw new InputError(`pass --runner-dir (the runner's install dir, with its .runner file) or --work-dir: no runner at ${guess}`, "--runner-dir");
  }
  if (runnerDir && readPlain(join10(runnerDir, ".runner")) === null && !o.workDir) {
    throw new InputError("no .runner file: is --runner-dir the runner's install dir (where config.sh wrote it)?", join10(runnerDir, ".runner"));
  }
  const svcFile = runnerDir ? join10(runnerDir, ".service") : null;
  const svc = svcFile ? readPlain(svcFile)?.trim() || null : null;
  if (svc !== null && !isUnitName(svc)) {
    throw new InputError(`${JSON.stringify(svc)} is not a systemd service name (letters, digits, @ . _ - and \\xNN escapes, ending in .service, not starting with -): refused, nothing written`, svcFile);
  }
  const wf = runnerDir ? workFolder(runnerDir) : "_work";
  const workDir = o.workDir ? resolve7(o.workDir) : isAbsolute2(wf) ? wf : join10(runnerDir, wf);
  const wst = fs.lstat(workDir);
  if (wst && wst.kind !== "dir") throw new InputError("not a directory: is it the runner's work dir (--work-dir)?", workDir);
  if (wst && wst.uid !== runner.uid) throw new InputError(`owned by uid ${wst.uid}, not by the runner user ${runner.name}: is it the runner's work dir (--work-dir, --runner-user)?`, workDir);
  if (!wst && fs.lstat(dirname4(workDir))?.kind !== "dir") throw new InputError("no such directory, nor its parent: is it the runner's work dir (--work-dir, --runner-dir)?", workDir);
  const cacheDir = resolve7(o.cacheDir ?? m.env.NPU_BLOCK_GATE_CACHE_DIR ?? join10(runner.home, ".cache", "npu-block-gate"));
  const refOff = m.env.NPU_BLOCK_GATE_REF_CACHE?.trim().toLowerCase() === "none";
  const refDir = refOff ? null : referenceRoot(cacheDir, m.env);
  const hfHome2 = resolve7(o.hfHome ?? hfHome(m.env, runner.home));
  const hubDir = resolve7(o.hfHome ? join10(hfHome2, HF_HUB.home_hub) : hfHubCache(m.env, runner.home));
  return { probeName, runner, runnerDir, svc, workDir, cacheDir, refDir, hfHome: hfHome2, hubDir };
}
function setup(m, o = {}) {
  const fs = { ...realSetupFs, ...o.fs };
  const uid = o.uid ?? (typeof process.getuid === "function" ? process.getuid() : -1);
  const dry = !!o.dryRun;
  const fix = !!o.fix;
  if (!dry && uid !== 0) {
    throw new InputError("agent setup creates a user and a group and changes file owners: run it as root (sudo npu-block-gate agent setup --runner-user <runner user> ...), or with --dry-run to see what it would do");
  }
  const db = new Db(m);
  const r = resolveInputs(m, fs, db, o, uid);
  const run = new Run(o.onStep);
  const runner = r.runner;
  const runnerRoot = runner.uid === 0;
  const prefix = m.root === "/" ? [] : ["--prefix", m.root];
  let probe = db.user(r.probeName);
  if (probe) {
    if (probe.uid === 0) throw new InputError(`${probe.name} has uid 0 (root): the probe would run as root; pass another --user`, m.path("/etc/passwd"));
    if (probe.uid === runner.uid) throw new InputError(`${probe.name} has the runner user's uid ${runner.uid}: isolation would be void; pass another --user`, m.path("/etc/passwd"));
    const login = !/(nologin|false)$/.test(probe.shell);
    run.add("probe-user", "already", `${probe.name} exists (uid ${probe.uid}${login ? `, login shell ${probe.shell}` : ", no login shell"})`);
  } else {
    const shell = ["/usr/sbin/nologin", "/sbin/nologin", "/usr/bin/false", "/bin/false"].find((s) => m.exists(s)) ?? "/usr/sbin/nologin";
    const args = [...prefix, "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent", "--shell", shell, "--comment", "npu-block-gate probe", r.probeName];
    if (dry) run.add("probe-user", "would", `create system user ${r.probeName} (useradd ${args.join(" ")})`);
    else {
      mustRun(m, "useradd", args, "passwd (shadow-utils)");
      probe = db.user(r.probeName);
      if (!probe) throw new InfraError(`useradd exited 0 but ${r.probeName} is not in the user database`, m.path("/etc/passwd"));
      run.add("probe-user", "done", `created system user ${probe.name} (uid ${probe.uid}, shell ${shell}, no home)`);
    }
  }
  if (probe) {
    const bad = PRIVILEGED_GROUPS.map((g) => db.group(g)).filter((g) => !!g && db.inGroup(probe, g));
    if (bad.length) {
      run.add(
        "probe-groups",
        "warn",
        `${probe.name} is in ${bad.map((g) => g.name).join(", ")}: as good as root, the separate uid isolates nothing`,
        bad.map((g) => `gpasswd -d ${probe.name} ${g.name}`).join("; ")
      );
    }
  }
  let group = db.group(PROBE_GROUP);
  if (group) run.add("group", "already", `group ${PROBE_GROUP} exists (gid ${group.gid})`);
  else if (dry) run.add("group", "would", `create group ${PROBE_GROUP} (groupadd ${[...prefix, "--system", PROBE_GROUP].join(" ")})`);
  else {
    mustRun(m, "groupadd", [...prefix, "--system", PROBE_GROUP], "passwd (shadow-utils)");
    group = db.group(PROBE_GROUP);
    if (!group) throw new InfraError(`groupadd exited 0 but ${PROBE_GROUP} is not in the group database`, m.path("/etc/group"));
    run.add("group", "done", `created group ${PROBE_GROUP} (gid ${group.gid})`);
  }
  {
    const names = [runner.name, r.probeName];
    const missing = names.filter((n) => {
      const a = n === runner.name ? runner : probe;
      return !group || !a || !db.inGroup(a, group);
    });
    if (!missing.length) run.add("group-members", "already", `${names.join(" and ")} are in ${PROBE_GROUP}`);
    else if (dry) run.add("group-members", "would", `add ${missing.join(" and ")} to ${PROBE_GROUP} (usermod -aG)`);
    else {
      for (const n of missing) mustRun(m, "usermod", [...prefix, "-aG", PROBE_GROUP, n], "passwd (shadow-utils)");
      group = db.group(PROBE_GROUP);
      const restart = missing.includes(runner.name) ? ` (restart the runner service: a running ${runner.name} process gets the group at its next start)` : "";
      run.add("group-members", "done", `added ${missing.join(" and ")} to ${PROBE_GROUP}${restart}`);
    }
  }
  {
    const path = m.path(SETUP_FILE);
    const want = `# Written by \`npu-block-gate agent setup\`: the user the probe (a pull request's model code) runs as.
${r.probeName}
`;
    const cur = m.read(SETUP_FILE);
    const st = fs.lstat(path);
    if (cur === want && st?.mode === 420) run.add("setup-file", "already", `${SETUP_FILE} names ${r.probeName} (0644)`);
    else if (dry) run.add("setup-file", "would", `write ${SETUP_FILE} naming ${r.probeName} (0644)${cur !== null && parseSetupFile(cur) !== r.probeName ? `, replacing ${parseSetupFile(cur) ?? "nothing"}` : ""}`);
    else {
      const was = cur === null ? null : parseSetupFile(cur);
      writeAtomic4(path, want, 420);
      run.add("setup-file", "done", `wrote ${SETUP_FILE} naming ${r.probeName} (0644)${cur !== null && was !== r.probeName ? `, was ${was ?? "empty"}` : ""}`);
    }
  }
  const sudoLine = `${runner.name} ALL=(${r.probeName}) NOPASSWD:NOSETENV: ALL`;
  if (runnerRoot) {
    run.add("sudoers", "skipped", `the runner runs as root: it starts the probe with setpriv, no sudoers rule needed`);
    if (!m.has("setpriv", ["/usr/bin/setpriv", "/bin/setpriv"])) run.add("setpriv", "warn", "setpriv is not installed: a root runner cannot start the probe as another user", "apt install util-linux (setpriv)");
  } else {
    const want = [
      "# Written by `npu-block-gate agent setup`: the runner user may start processes as the probe user, and",
      "# nothing else. NOSETENV: no variable passes through sudo; the Action hands the probe a fixed environment with env -i.",
      sudoLine,
      ""
    ].join("\n");
    const cur = m.read(SUDOERS_FILE);
    const st = fs.lstat(m.path(SUDOERS_FILE));
    if (cur === want && st?.mode === 288) run.add("sudoers", "already", `${SUDOERS_FILE} (0440): ${sudoLine}`);
    else if (dry) run.add("sudoers", "would", `write ${SUDOERS_FILE} (0440, checked with visudo -cf): ${sudoLine}`);
    else {
      writeSudoers(m, SUDOERS_FILE, want);
      run.add("sudoers", "done", `wrote ${SUDOERS_FILE} (0440, visudo -cf ok): ${sudoLine}`);
    }
    const main = m.read("/etc/sudoers");
    if (main !== null && !/^\s*[#@]includedir\s+\/etc\/sudoers\.d\s*$/m.test(main)) {
      run.add("sudoers-include", "warn", "/etc/sudoers has no @includedir /etc/sudoers.d: sudo never reads the rule", "add the line @includedir /etc/sudoers.d to /etc/sudoers (with visudo)");
    }
    if (!m.has("sudo", ["/usr/bin/sudo", "/bin/sudo"])) run.add("sudo", "warn", "sudo is not installed: the runner user cannot start the probe as another user", "apt install sudo");
  }
  const drainRule = drainStep(m, fs, run, r, runner, dry);
  {
    const st = fs.lstat(m.path(ACCEL_NODE));
    const g = st ? db.groupByGid(st.gid) : null;
    if (!st) run.add("npu-access", "warn", `no ${ACCEL_NODE}: cannot tell which group opens the NPU (see agent doctor)`, "load amdxdna (agent doctor says why the node is missing), then run setup again");
    else if (st.gid === 0 || !g) {
      run.add(
        "npu-access",
        "warn",
        `${ACCEL_NODE} belongs to ${g?.name ?? `gid ${st.gid}`} (mode ${octal(st.mode)}): no group to give the probe user`,
        'give the node a group with a udev rule (e.g. SUBSYSTEM=="accel", GROUP="render", MODE="0660"), then run setup again'
      );
    } else if ((st.mode & 48) !== 48) {
      run.add("npu-access", "warn", `${ACCEL_NODE} is ${g.name} but mode ${octal(st.mode)}: the group cannot read and write it`, 'a udev rule with MODE="0660" for the accel node');
    } else if (probe && db.inGroup(probe, g)) run.add("npu-access", "already", `${r.probeName} is in ${g.name} (${ACCEL_NODE} mode ${octal(st.mode)})`);
    else if (dry) run.add("npu-access", "would", `add ${r.probeName} to ${g.name}, the group of ${ACCEL_NODE} (usermod -aG)`);
    else {
      mustRun(m, "usermod", [...prefix, "-aG", g.name, r.probeName], "passwd (shadow-utils)");
      run.add("npu-access", "done", `added ${r.probeName} to ${g.name}, the group of ${ACCEL_NODE}`);
    }
  }
  memlockSteps(m, run, runner, probe, r, db);
  cacheStep(fs, run, "kernel-cache", r.cacheDir, r.refDir ? [r.refDir] : [], runner, probe, dry);
  if (r.refDir) cacheStep(fs, run, "reference-cache", r.refDir, [], runner, probe, dry);
  else run.add("reference-cache", "skipped", "NPU_BLOCK_GATE_REF_CACHE=none: no reference cache");
  hfSteps(fs, run, r, runner, probe, dry, fix);
  workDirStep(fs, run, r, runner, group, dry);
  if (r.runnerDir) secretsStep(fs, run, r.runnerDir, probe, db, dry, fix);
  checkoutsStep(fs, run, r, runner, dry);
  reachStep(m, fs, run, r, probe, db, dry, fix, o.python ?? null);
  const pending = run.steps.some((s) => s.status === "would");
  if (!runnerRoot) {
    const args = ["--reuid", runner.name, "--regid", String(runner.gid), "--init-groups", "--", "sudo", "-n", "-u", r.probeName, "--", "true"];
    if (!probe || pending || uid !== 0) run.add("switch", dry ? "would" : "skipped", `check that ${runner.name} can start processes as ${r.probeName} (sudo -n -u ${r.probeName})${uid !== 0 ? " (needs root)" : ""}`);
    else {
      const c = runSbin(m, "setpriv", args, 3e4);
      if (c.status === 0) run.add("switch", "already", `${runner.name} can start processes as ${r.probeName} (sudo -n -u ${r.probeName} -- true)`);
      else run.add("switch", "fail", `${runner.name} cannot start processes as ${r.probeName}: setpriv ${args.join(" ")}: ${why2(c)}`, `check ${SUDOERS_FILE} with sudo -l -U ${runner.name}`);
    }
  }
  pythonStep(m, fs, run, r, probe, db, dry, uid, pending, o.python ?? null);
  sandboxStep(m, run, r, runner, probe, uid, pending);
  const changed = run.steps.filter((s) => s.status === "done").length;
  return {
    root: m.root,
    runner_user: runner.name,
    probe_user: r.probeName,
    dry_run: dry,
    fix,
    paths: { setup_file: SETUP_FILE, sudoers: runnerRoot ? null : SUDOERS_FILE, drain_sudoers: drainRule ? DRAIN_SUDOERS_FILE : null, work_dir: r.workDir, cache_dir: r.cacheDir, reference_cache: r.refDir, hf_hub_cache: r.hubDir },
    steps: run.steps,
    changed,
    exit_code: run.steps.some((s) => s.status === "fail") ? 3 : 0
  };
}
function writeSudoers(m, file, text) {
  writeAtomic4(m.path(file), text, 288, (tmp) => {
    const v = runSbin(m, "visudo", ["-cf", tmp], 3e4);
    if (v.missing) throw new InfraError(`visudo not found (install sudo): could not check the rule before installing it`, m.path(file));
    if (v.status !== 0) throw new InfraError(`visudo -cf rejected the rule (${why2(v)}); nothing installed`, m.path(file));
  });
}
function drainStep(m, fs, run, r, runner, dry) {
  if (runner.uid === 0) {
    run.add("drain-sudoers", "skipped", "the runner runs as root, which sudo lets stop and start its service without a rule: none installed");
    return null;
  }
  const svc = r.svc;
  if (!svc) {
    run.add("drain-sudoers", "skipped", `no .service in ${r.runnerDir ?? "the runner dir (no --runner-dir)"}: the runner is not installed as a service, so no rule was installed; agent drain works by label (--token-file)`);
    return null;
  }
  const rule = drainSudoersRule(runner.name, svc, systemctlPath(m));
  const want = [
    "# Written by `npu-block-gate agent setup`: agent drain and undrain stop and start this runner's service, and",
    "# nothing else (no SETENV, no other unit, no other verb).",
    rule,
    ""
  ].join("\n");
  const cur = m.read(DRAIN_SUDOERS_FILE);
  const st = fs.lstat(m.path(DRAIN_SUDOERS_FILE));
  if (cur === want && st?.mode === 288) run.add("drain-sudoers", "already", `${DRAIN_SUDOERS_FILE} (0440): ${rule}`);
  else if (dry) run.add("drain-sudoers", "would", `write ${DRAIN_SUDOERS_FILE} (0440, checked with visudo -cf): ${rule}`);
  else {
    writeSudoers(m, DRAIN_SUDOERS_FILE, want);
    run.add("drain-sudoers", "done", `wrote ${DRAIN_SUDOERS_FILE} (0440, visudo -cf ok): ${rule}`);
  }
  return rule;
}
function parseSystemdLimit(v) {
  const t = v.trim();
  if (t === "infinity") return "unlimited";
  return /^\d+$/.test(t) ? Number(t) : null;
}
function memlockEntries(m, user, db) {
  const files = ["/etc/security/limits.conf", ...(m.list("/etc/security/limits.d") ?? []).filter((f) => f.endsWith(".conf")).map((f) => `/etc/security/limits.d/${f}`)];
  const out = [];
  const gids = db.gidsOf(user);
  for (const file of files) {
    for (const line of (m.read(file) ?? "").split("\n")) {
      const f = line.replace(/#.*/, "").trim().split(/\s+/);
      if (f.length < 4 || f[2] !== "memlock" || f[1] === "soft") continue;
      const dom = f[0];
      const applies = dom === "*" || dom === user.name || dom.startsWith("@") && (() => {
        const g = db.group(dom.slice(1));
        return !!g && gids.includes(g.gid);
      })();
      if (!applies) continue;
      const v = f[3] === "unlimited" || f[3] === "infinity" || f[3] === "-1" ? "unlimited" : Number(f[3]) * 1024;
      if (v === "unlimited" || Number.isFinite(v)) out.push([file, line.trim(), v]);
    }
  }
  return out;
}
function memlockSteps(m, run, runner, probe, r, db) {
  const svc = r.svc;
  const need = `XRT needs ~${formatBytes(MEMLOCK_NEEDED)} of locked memory`;
  if (!svc) {
    run.add(
      "memlock",
      "warn",
      `the runner is not installed as a service (no .service in the runner dir): the probe inherits the memlock limit of whatever starts ./run.sh; ${need}`,
      "start the runner with LimitMEMLOCK=infinity (a systemd unit), or ulimit -l unlimited before ./run.sh"
    );
  } else {
    const c = m.run("systemctl", ["show", "-p", "LimitMEMLOCK", "--value", svc], 15e3);
    const v = c.status === 0 ? parseSystemdLimit(c.stdout) : null;
    const fixLine = `sudo systemctl edit ${svc} with [Service] LimitMEMLOCK=infinity, then restart it`;
    if (v === null) run.add("memlock", "warn", `cannot read ${svc}'s LimitMEMLOCK (systemctl show: ${c.status === 0 ? JSON.stringify(c.stdout.trim()) : why2(c)}); the probe inherits it`, fixLine);
    else if (v === "unlimited" || v >= MEMLOCK_NEEDED) run.add("memlock", "already", `${svc}: LimitMEMLOCK=${v === "unlimited" ? "infinity" : formatBytes(v)}; the probe inherits it`);
    else run.add("memlock", "warn", `${svc}: LimitMEMLOCK=${formatBytes(v)}, inherited by the probe; ${need}`, fixLine);
  }
  if (runner.uid === 0 || !probe) return;
  const pam = m.read("/etc/pam.d/sudo") ?? "";
  if (!/^\s*session\s+\S+\s+pam_limits\.so/m.test(pam)) return;
  const low = memlockEntries(m, probe, db).filter(([, , v]) => v !== "unlimited" && v < MEMLOCK_NEEDED);
  if (low.length) {
    const [file, line, v] = low[0];
    run.add(
      "memlock-sudo",
      "warn",
      `sudo applies ${file} "${line}" (${formatBytes(v)}) to ${probe.name}; ${need}`,
      `add "${probe.name} - memlock unlimited" to /etc/security/limits.d/npu-block-gate.conf`
    );
  }
}
function ensureDir(fs, dir, owner, dry) {
  const made = [];
  const missing = [];
  for (let d = dir; !fs.lstat(d); d = dirname4(d)) {
    missing.unshift(d);
    if (d === dirname4(d)) break;
  }
  if (dry) return missing;
  for (const d of missing) {
    try {
      mkdirSync3(d, { mode: 493 });
      const st = fs.lstat(d);
      fs.chmod(d, 493, st.uid);
      fs.chown(d, owner.uid, owner.gid, st.uid);
    } catch (e) {
      throw fsError(e, d, "cannot create the directory");
    }
    made.push(d);
  }
  return made;
}
function walk(fs, root, skip, visit) {
  const stack = [root];
  while (stack.length) {
    const p = stack.pop();
    if (skip.includes(p)) continue;
    const st = fs.lstat(p);
    if (!st) continue;
    visit(p, st);
    if (st.kind === "dir") for (const n of fs.readdir(p) ?? []) stack.push(join10(p, n));
  }
}
function cacheStep(fs, run, id, dir, skip, owner, probe, dry) {
  const made = ensureDir(fs, dir, owner, dry);
  const root = realOr(dir);
  const skipReal = skip.map(realOr);
  let entries = 0;
  let chown = 0;
  let chmod = 0;
  const foreign = [];
  walk(fs, root, skipReal, (p, st) => {
    if (st.kind !== "dir" && st.kind !== "file") return;
    entries++;
    const want = st.kind === "dir" || st.mode & 64 ? 493 : 420;
    const fromProbe = !!probe && st.uid === probe.uid;
    if (!fromProbe && st.uid !== owner.uid) {
      foreign.push(p);
      return;
    }
    if (fromProbe) chown++;
    if (st.mode !== want) chmod++;
    if (dry) return;
    try {
      if (fromProbe) fs.chown(p, owner.uid, owner.gid, st.uid);
      if (st.mode !== want || fromProbe) fs.chmod(p, want, owner.uid);
    } catch (e) {
      throw fsError(e, p, fromProbe ? "cannot change the owner" : "cannot change the mode");
    }
  });
  const what = `owned by ${owner.name}, directories 0755, files 0644 (0755 when executable)`;
  const n = plural(entries, "entry", "entries");
  const left = foreign.length ? `; ${foreign.length} owned by another user left alone (e.g. ${foreign[0]})` : "";
  const leftFix = foreign.length ? `chown -R ${owner.name}: ${dir} if nothing else should own them, then run setup again` : null;
  if (dry && made.length) run.add(id, "would", `create ${dir}, ${what}`);
  else if (!made.length && !chown && !chmod) run.add(id, foreign.length ? "warn" : "already", `${dir}: ${n}, ${what}${left}`, leftFix);
  else {
    const parts = [made.length ? `created ${made.join(", ")}` : "", chown ? `${dry ? "hand" : "handed"} ${chown} of ${probe?.name ?? "the probe user"}'s to ${owner.name}` : "", chmod ? `${dry ? "change" : "changed"} the mode of ${chmod}` : ""].filter(Boolean);
    run.add(id, foreign.length ? "warn" : dry ? "would" : "done", `${dir}: ${parts.join(", ")} (${n}): ${what}${left}`, leftFix);
  }
}
function hfSteps(fs, run, r, runner, probe, dry, fix) {
  const hub = r.hubDir;
  if (!fs.lstat(hub)) run.add("hf-cache", "skipped", `no HF hub cache at ${hub} (pass --hf-home)`);
  else {
    let entries = 0;
    const writable = [];
    const unreadable = [];
    const probeOwned = [];
    const foreign = [];
    const acts = [];
    walk(fs, realOr(hub), [], (p, st) => {
      if (st.kind !== "dir" && st.kind !== "file") return;
      entries++;
      const read = st.kind === "dir" ? 5 : 4;
      let want = st.mode;
      if (st.mode & 18) {
        writable.push(p);
        want &= ~18;
      }
      if ((st.mode & read) !== read) {
        unreadable.push(p);
        want |= read;
      }
      const fromProbe = !!probe && st.uid === probe.uid;
      if (fromProbe) probeOwned.push(p);
      if (!fromProbe && st.uid !== runner.uid) {
        if (want !== st.mode) foreign.push(p);
        return;
      }
      if (want === st.mode && !fromProbe) return;
      acts.push(() => {
        try {
          if (fromProbe) fs.chown(p, runner.uid, runner.gid, st.uid);
          fs.chmod(p, want, runner.uid);
        } catch (e) {
          throw fsError(e, p, "cannot repair");
        }
      });
    });
    const n = plural(entries, "entry", "entries");
    const found = [
      writable.length ? `${writable.length} group/world-writable (e.g. ${writable[0]})` : "",
      unreadable.length ? `${unreadable.length} not readable by others (e.g. ${unreadable[0]})` : "",
      probeOwned.length ? `${probeOwned.length} owned by ${probe.name} (e.g. ${probeOwned[0]})` : ""
    ].filter(Boolean).join("; ");
    const left = foreign.length ? `; ${foreign.length} of them owned by another user, left alone (e.g. ${foreign[0]})` : "";
    const leftFix = foreign.length ? `chown -R ${runner.name}: ${hub} if nothing else should own them, then run setup again` : null;
    if (!found) run.add("hf-cache", "already", `${hub}: ${n}, readable by the probe user, writable only by their owners`);
    else if (!fix) run.add("hf-cache", "warn", `${hub} (${n}): ${found}${left}`, `run setup again with --fix (chmod go-w, o+rX; chown ${probe?.name ?? "the probe user"}'s to ${runner.name})${leftFix ? `; ${leftFix}` : ""}`);
    else if (dry) run.add("hf-cache", foreign.length ? "warn" : "would", `repair ${hub} (${n}): ${found}${left}`, leftFix);
    else if (!acts.length) run.add("hf-cache", "warn", `${hub} (${n}): ${found}${left}`, leftFix);
    else {
      for (const a of acts) a();
      run.add("hf-cache", foreign.length ? "warn" : "done", `repaired ${hub} (${n}): ${found}${left}`, leftFix);
    }
  }
  const tokens = ["token", "stored_tokens"].map((f) => join10(r.hfHome, f)).map((p) => [p, fs.lstat(p)]).filter((x) => x[1]?.kind === "file");
  const open = tokens.filter(([, st]) => st.mode & 63);
  if (!tokens.length) run.add("hf-token", "already", `no HF token stored in ${r.hfHome}`);
  else if (!open.length) run.add("hf-token", "already", `${tokens.map(([p, st]) => `${p} (${octal(st.mode)})`).join(", ")}: only its owner reads it`);
  else {
    const list = open.map(([p, st]) => `${p} (mode ${octal(st.mode)})`).join(", ");
    const cmd = `chmod 600 ${open.map(([p]) => p).join(" ")}`;
    if (!fix) run.add("hf-token", "warn", `${list}: the probe user can read the HF token`, `${cmd} (or run setup again with --fix)`);
    else if (dry) run.add("hf-token", "would", `chmod 600 ${list}`);
    else {
      for (const [p, st] of open) {
        try {
          fs.chmod(p, st.mode & 448, st.uid);
        } catch (e) {
          throw fsError(e, p, "cannot change the mode");
        }
      }
      run.add("hf-token", "done", `chmod 600 ${list}`);
    }
  }
}
function workDirStep(fs, run, r, runner, group, dry) {
  const dir = r.workDir;
  const why3 = "what the runner creates below carries the group; not group-writable (the probe writes only its run's model dir and run dir)";
  let st = fs.lstat(dir);
  if (!group || !st && dry) {
    run.add("work-dir", "would", `${st ? "" : "create "}${dir}: owner ${runner.name}, group ${PROBE_GROUP}, setgid (${octal(1517)}): ${why3}`);
    return;
  }
  let created = false;
  if (!st) {
    ensureDir(fs, dir, runner, false);
    created = true;
    st = fs.lstat(dir);
  }
  const want = (st.mode & 493 | 1064) & ~18;
  const own = st.gid !== group.gid;
  if (!created && !own && st.mode === want) {
    run.add("work-dir", "already", `${dir}: owner ${runner.name}, group ${PROBE_GROUP}, setgid (${octal(st.mode)}): ${why3}`);
    return;
  }
  const changes = [created ? "created" : "", own ? `group ${PROBE_GROUP}` : "", st.mode !== want ? `mode ${octal(st.mode)} -> ${octal(want)}` : ""].filter(Boolean).join(", ");
  if (dry) {
    run.add("work-dir", "would", `${dir}: ${changes}: ${why3}`);
    return;
  }
  try {
    if (own) fs.chown(dir, runner.uid, group.gid, runner.uid);
    fs.chmod(dir, want, runner.uid);
  } catch (e) {
    throw fsError(e, dir, "cannot set the group and mode");
  }
  run.add("work-dir", "done", `${dir}: ${changes}: ${why3}`);
}
function secretsStep(fs, run, runnerDir, probe, db, dry, fix) {
  const gids = probe ? db.gidsOf(probe) : [];
  const files = [".credentials", ".credentials_rsaparams", ".env"].map((f) => join10(runnerDir, f));
  const open = [];
  for (const p of files) {
    const st = fs.lstat(p);
    if (st?.kind !== "file") continue;
    if (st.mode & 4 || st.mode & 32 && gids.includes(st.gid)) open.push([p, st]);
  }
  if (!open.length) {
    run.add("runner-secrets", "already", `${runnerDir}: .credentials, .credentials_rsaparams and .env are not readable by the probe user`);
    return;
  }
  const list = open.map(([p, st]) => `${p} (mode ${octal(st.mode)})`).join(", ");
  if (!fix) run.add("runner-secrets", "warn", `the probe user can read ${list}`, `chmod 600 ${open.map(([p]) => p).join(" ")} (or run setup again with --fix)`);
  else if (dry) run.add("runner-secrets", "would", `chmod 600 ${list}`);
  else {
    for (const [p, st] of open) {
      try {
        fs.chmod(p, st.mode & 448, st.uid);
      } catch (e) {
        throw fsError(e, p, "cannot change the mode");
      }
    }
    run.add("runner-secrets", "done", `chmod 600 ${list}`);
  }
}
function canSearch(st, probe, gids) {
  if (probe && st.uid === probe.uid) return !!(st.mode & 64);
  if (gids.includes(st.gid)) return !!(st.mode & 8);
  return !!(st.mode & 1);
}
function isHome(d, r) {
  return d === r.runner.home || d === "/root" || /^\/home\/[^/]+$/.test(d);
}
function aclSearch(m, d, probe) {
  const c = m.run("getfacl", ["--omit-header", "--absolute-names", d], 15e3);
  return c.status === 0 && new RegExp(`^user:${probe}:..x`, "m").test(c.stdout);
}
function reachStep(m, fs, run, r, probe, db, dry, fix, python) {
  const gids = probe ? db.gidsOf(probe) : [];
  const targets = [r.cacheDir, r.refDir, r.hubDir, r.workDir, python && isAbsolute2(python) ? dirname4(python) : null].filter((t) => !!t && !!fs.lstat(t));
  const blockers = /* @__PURE__ */ new Map();
  for (const t of targets) {
    const real = realOr(t);
    const parts = real.split("/").filter(Boolean);
    for (let i = 0; i <= parts.length; i++) {
      const d = "/" + parts.slice(0, i).join("/");
      const st = fs.lstat(d);
      if (!st || st.kind !== "dir") continue;
      if (!canSearch(st, probe, gids) && !blockers.has(d) && !aclSearch(m, d, r.probeName)) blockers.set(d, { st, for: t });
    }
  }
  if (!blockers.size) {
    run.add("reach", "already", `${probe?.name ?? r.probeName} can search every directory on the way to ${targets.join(", ")}`);
    return;
  }
  const list = [...blockers].map(([d, b]) => `${d} (mode ${octal(b.st.mode)}, on the way to ${b.for})`).join("; ");
  const homes = [...blockers.keys()].filter((d) => isHome(d, r));
  const others = [...blockers.keys()].filter((d) => !isHome(d, r));
  const how = [
    homes.length ? `setfacl -m u:${r.probeName}:x ${homes.join(" ")} (the probe user alone, search only; never o+x on a home)` : "",
    others.length ? `chmod o+x ${others.join(" ")} (search only, no listing)` : ""
  ].filter(Boolean).join("; ");
  const outside = homes.length ? "; or keep the caches, the HF cache, the work dir and the Python outside the home" : "";
  if (!fix) run.add("reach", "warn", `${r.probeName} cannot search ${list}`, `${how}${outside}; or run setup again with --fix`);
  else if (dry) run.add("reach", "would", `${how}: ${list}`);
  else {
    if (homes.length) {
      const c = runSbin(m, "setfacl", ["-m", `u:${r.probeName}:x`, ...homes], 3e4);
      if (c.status !== 0) {
        run.add("reach", "warn", `${r.probeName} cannot search ${list}; setfacl: ${c.missing ? "not installed (apt install acl)" : why2(c)}`, `setfacl -m u:${r.probeName}:x ${homes.join(" ")}${outside}`);
        return;
      }
    }
    for (const d of others) {
      const b = blockers.get(d);
      try {
        fs.chmod(d, b.st.mode | 1, b.st.uid);
      } catch (e) {
        throw fsError(e, d, "cannot change the mode");
      }
    }
    run.add("reach", "done", `${how}: ${list}`);
  }
}
function pythonStep(m, fs, run, r, probe, db, dry, uid, pending, python) {
  if (!python) {
    run.add("python", "skipped", `no --python: pass the Python the Action uses (its python input, or NPU_BLOCK_GATE_PYTHON) to check that ${r.probeName} can import numpy with it`);
    return;
  }
  const check = `${python} -c "import numpy"`;
  if (!probe || uid !== 0 || pending) {
    run.add("python", dry ? "would" : "skipped", `check that ${r.probeName} can run ${check}${uid !== 0 ? " (needs root)" : ""}`);
    return;
  }
  const args = ["--reuid", probe.name, "--regid", String(probe.gid), "--init-groups", "--", python, "-c", "import numpy"];
  let c = runSbin(m, "setpriv", args, 12e4);
  if (c.missing) c = m.run("sudo", ["-n", "-u", probe.name, "--", python, "-c", "import numpy"], 12e4);
  if (c.status === 0) {
    run.add("python", "already", `${probe.name} can run ${check}`);
    return;
  }
  const gids = db.gidsOf(probe);
  const fixes = [];
  if (/No module named '?numpy/.test(`${c.stderr}
${c.stdout}`)) fixes.push(`install numpy into that environment (${python} -m pip install numpy)`);
  else if (isAbsolute2(python)) {
    const parts = realOr(dirname4(python)).split("/").filter(Boolean);
    const blocked = [];
    for (let i = 0; i <= parts.length; i++) {
      const d = "/" + parts.slice(0, i).join("/");
      const st = fs.lstat(d);
      if (st?.kind === "dir" && !canSearch(st, probe, gids) && !aclSearch(m, d, probe.name)) blocked.push(d);
    }
    const homes = blocked.filter((d) => isHome(d, r));
    if (homes.length) fixes.push(`setfacl -m u:${probe.name}:x ${homes.join(" ")} (search only), or install the environment outside the home (e.g. /opt/mlir-air)`);
    if (blocked.length > homes.length) fixes.push(`chmod o+x ${blocked.filter((d) => !isHome(d, r)).join(" ")} (search only)`);
    if (!blocked.length) fixes.push(`install the environment where others may read it (as pip and venv make it: files 0644, dirs 0755)`);
  }
  fixes.push(`or point --python (and the Action's python input) at a Python ${probe.name} can read, with numpy`);
  run.add("python", "fail", `${probe.name} cannot run ${check}: ${why2(c)}`, fixes.join("; "));
}
function sandboxStep(m, run, r, runner, probe, uid, pending) {
  if (!m.has("bwrap", ["/usr/bin/bwrap", "/bin/bwrap"])) {
    run.add("sandbox", "warn", "bubblewrap is not installed: the probe would run as the probe user without its sandbox (pull requests refused, trusted runs warned)", "apt install bubblewrap");
    return;
  }
  const test = ["--unshare-pid", "--unshare-net", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"];
  const as = runner.uid === 0 ? "root (the runner)" : r.probeName;
  if (!probe || uid !== 0 || pending) {
    run.add("sandbox", "skipped", `check that ${as} can start bubblewrap${uid !== 0 ? " (needs root)" : ""}`);
    return;
  }
  const c = runner.uid === 0 ? m.run("bwrap", test, 3e4) : runSbin(m, "setpriv", ["--reuid", probe.name, "--regid", String(probe.gid), "--init-groups", "--", "bwrap", "--unshare-user", ...test], 3e4);
  if (c.status === 0) {
    run.add("sandbox", "already", `${as} can start bubblewrap${runner.uid === 0 ? "" : " in a user namespace"}: the probe runs in its sandbox`);
    return;
  }
  const apparmor = (m.read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") ?? "").trim() === "1";
  const max = (m.read("/proc/sys/user/max_user_namespaces") ?? "").trim() === "0";
  const cause = apparmor ? "unprivileged user namespaces are restricted by AppArmor (kernel.apparmor_restrict_unprivileged_userns=1)" : max ? "user namespaces are off (user.max_user_namespaces=0)" : why2(c);
  const fix = apparmor ? "an AppArmor profile for /usr/bin/bwrap with the userns rule (/etc/apparmor.d/bwrap, docs/action.md section 2; apparmor_parser -r it), or sysctl kernel.apparmor_restrict_unprivileged_userns=0" : max ? "sysctl user.max_user_namespaces=15000 (and in /etc/sysctl.d)" : `run bwrap${runner.uid === 0 ? "" : " --unshare-user"} ${test.join(" ")} as ${as} to see why`;
  run.add("sandbox", "warn", `${as} cannot start bubblewrap: ${cause}; until then pull requests are refused and trusted runs go without the sandbox`, fix);
}
function checkoutsStep(fs, run, r, runner, dry) {
  const open = [];
  const foreign = [];
  for (const repo of fs.readdir(r.workDir) ?? []) {
    if (repo.startsWith("_")) continue;
    for (const name of fs.readdir(join10(r.workDir, repo)) ?? []) {
      const g = join10(r.workDir, repo, name, ".git");
      const st = fs.lstat(g);
      if (st?.kind !== "dir" || !(st.mode & 63)) continue;
      if (st.uid !== runner.uid) {
        foreign.push(g);
        continue;
      }
      open.push([g, st]);
    }
  }
  const left = foreign.length ? `; ${foreign.length} of another owner left alone (e.g. ${foreign[0]})` : "";
  if (!open.length) {
    run.add("checkouts", foreign.length ? "warn" : "already", `the checkouts' git dirs under ${r.workDir} are closed to group and others${left}`, foreign.length ? `chmod go-rwx ${foreign.join(" ")}` : null);
    return;
  }
  const list = open.map(([p, st]) => `${p} (mode ${octal(st.mode)})`).join(", ");
  if (dry) {
    run.add("checkouts", "would", `chmod go-rwx ${list} (a persisted token in .git/config)${left}`);
    return;
  }
  for (const [p, st] of open) {
    try {
      fs.chmod(p, st.mode & 4032, st.uid);
    } catch (e) {
      throw fsError(e, p, "cannot change the mode");
    }
  }
  run.add("checkouts", foreign.length ? "warn" : "done", `chmod go-rwx ${list} (a persisted token in .git/config is the owner's alone)${left}`, foreign.length ? `chmod go-rwx ${foreign.join(" ")}` : null);
}
var LABEL2 = { done: "done", already: "already", would: "would", skipped: "skipped", warn: "WARN", fail: "FAIL" };
function setupHeader(root, dry) {
  return `npu-block-gate agent setup${root === "/" ? "" : ` (root ${root})`}${dry ? " (dry run: nothing changes)" : ""}
`;
}
function renderStep(s) {
  return `  ${LABEL2[s.status].padEnd(8)} ${s.id.padEnd(15)} ${s.detail}${s.fix ? `; fix: ${s.fix}` : ""}
`;
}
function renderSummary(r) {
  const warn = r.steps.filter((s) => s.status === "warn").length;
  const fail = r.steps.filter((s) => s.status === "fail").map((s) => s.id);
  const would = r.steps.filter((s) => s.status === "would").length;
  const tail2 = `${warn ? `; ${plural(warn, "warning")}` : ""}${fail.length ? `; failed: ${fail.join(", ")} (exit 3)` : ""}`;
  if (r.dry_run) return `dry run: ${would ? `${plural(would, "step")} would change something` : "nothing would change"}${tail2}
`;
  if (!r.changed) return `nothing to change: already set up for ${r.probe_user}${tail2}
`;
  return `${plural(r.changed, "change")} made; the runner starts the probe as ${r.probe_user}${tail2}
`;
}

// src/agent/cli.ts
var AGENT_HELP = `npu-block-gate agent: the self-hosted NPU runner side

Usage:
  npu-block-gate agent setup [--user NAME] [--runner-user NAME] [--runner-dir D | --work-dir W] [--cache-dir DIR]
        [--hf-home DIR] [--python P] [--fix] [--dry-run] [--json] [--root DIR]
      as root, once: the probe user that runs pull requests' model code (uid isolation), its sudoers
      rule, the NPU group, the caches read-only for it, the work dir's shared group (agent setup --help)
  npu-block-gate agent doctor [--json] [--root DIR] [--python P] [--cache-dir DIR] [--runner-dir D] [--functional] [--functional-test T]
      health checks. Device: the NPU on the PCI bus (AMD 1022:1502/17f0/...), amdxdna loaded and
      bound to it, its /dev/accel node, the firmware (sysfs), this boot's kernel log (amdxdna's own
      signatures since the last driver load, in-kernel reset or passing probe; read newest first up
      to a stated bound; an unreadable log is UNKNOWN, never ok) and, with --functional, xrt-smi
      validate run as the runner's jobs run NPU work (their user, their memlock; 30 s timeout): a
      memlock, permission or XRT-install failure is a host warning, only the NPU's own failure fails.
      Host: memlock (soft and hard), xrt-smi examine, free disk, HF cache, Python, the NPU lock.
      Exit 0 when nothing fails, 3 when a check fails.
  npu-block-gate agent status [--json] [--root DIR] [--cache-dir DIR] [--runner-dir D]
      one screen: runner, NPU generation, health, device, versions (and what changed since the last
      job), power mode, both NPU locks (read only), processes holding /dev/accel, functional probe,
      drain (verified), cache, last runs
  npu-block-gate agent fleet FILE... [--json]
      the agent status --json of several runners (files, - for stdin) merged into one table:
      runner, NPU generation, driver and firmware, health, drained, last job
  npu-block-gate agent drain --runner-dir D [--token-file F [--label L]... [--api-url U]] [--reason TEXT]
      take the runner out of rotation: with a token, remove its NPU label(s) through the GitHub
      API (runner id from D/.runner; default: every custom label); without, stop its service
      (D/.service) now, or after the running job; drained only once verified (the labels read back
      gone, systemctl is-active); a refused drain says why and leaves the runner in rotation
  npu-block-gate agent undrain --runner-dir D [--token-file F] [--label L]... [--force]
      run the functional probe; when it passes, put the labels back (or start the service)
  npu-block-gate agent cache stats [--cache-dir DIR] [--json]
      kernel cache entries (key, model, size, created, last used) and the total
  npu-block-gate agent cache gc [--max-bytes N] [--cache-dir DIR] [--json]
      trim the kernel cache to N bytes (e.g. 20G, 500M; default 20G), least recently used first
  npu-block-gate agent lock status [--path P] [--root DIR] [--json]
      the NPU lock: free, or held by pid N (its command line), and how many wait
  npu-block-gate agent lock wait [--path P] [--timeout S] [--root DIR] [--json]
      wait until the lock is free (flock -w, else polling /proc/locks), a line every 15 s naming
      the holder; exit 0 when free, 3 after S seconds (default 1800). Does not take the lock.
  npu-block-gate agent hooks install [--dir DIR] [--runner-dir D] [--chain] [--python P] [--hf-home DIR] [--offline]
        [--fork-policy probe-only|allow|deny] [--functional-when auto|always|never] [--functional-max-age S]
        [--when-unknown refuse|run] [--cache-max-bytes N]
        [--drain-on-failure [--token-file F] [--label L]...] [--textfile PATH] [--state-dir DIR]
      write the runner's job hooks into DIR (default ~/.npu-block-gate/hooks) with a copy of this
      CLI. job-started: the doctor; only a device failure fails the job, the rest are warning
      annotations; then the fork policy. job-completed: diagnostics (DIR/logs, 14 days), device
      checks again (drain on failure when enabled), one JSON line per job and a node_exporter
      textfile, cache gc. With --runner-dir, sets ACTIONS_RUNNER_HOOK_JOB_STARTED/_COMPLETED in
      its .env; an existing different hook there is kept running first only with --chain.
  npu-block-gate agent hook job-started|job-completed [...]
      what the hook scripts run (exit 1 from job-started fails the job)

Options:
  --root DIR           read /dev, /sys, /proc, /tmp and /opt under DIR (default /; for tests and containers)
  --cache-dir DIR      kernel cache root (default $NPU_BLOCK_GATE_CACHE_DIR or ~/.cache/npu-block-gate)
  --state-dir DIR      the agent's state (default $NPU_BLOCK_GATE_STATE_DIR or ~/.npu-block-gate/state)
  --python P           Python to check (default: $NPU_BLOCK_GATE_PYTHON, python3, /usr/bin/python3)
  --path P             the lock file (default $NPU_BLOCK_GATE_NPU_LOCK or /tmp/mlir-air-npu.lock)
  --functional-test T  the xrt-smi validate test (default latency; verify before XRT 2.18)
  --functional-max-age S  the interval: a good probe older than S seconds is run again; a failed
                       result younger than S stands until a driver reload (default ${FUNCTIONAL_MAX_AGE_S})
  --functional-timeout S  give xrt-smi validate S seconds; a timeout is a device failure (default ${FUNCTIONAL_TIMEOUT_S})
  --fix                setup: also repair what it otherwise reports (HF cache, tokens, search permission)
  --dry-run            setup: say what would change, change nothing
  --fork-policy P      pull requests from forks: probe-only (default: pull_request only, where
                       GitHub withholds secrets and write tokens), allow, deny
  --when-unknown W     job-started, when the kernel log shows a warning (or an error line no signature
                       explains) and the functional probe could not run (memlock, permissions, the XRT
                       install): refuse (default: nothing can vouch for the NPU) or run (with warnings)
  --token-file F       a file (mode 600) with a token that may administer the runner's labels
  --json               machine-readable output

Exit codes: 0 ok, 1 a job-started hook refused the job, 2 usage or bad input, 3 infrastructure
(a doctor check failed, lock wait timed out, the GitHub API or the service stop failed, the
functional probe did not pass at undrain).
`;
var SETUP_HELP = `npu-block-gate agent setup: prepare this runner for uid isolation of the probe

Usage:
  sudo npu-block-gate agent setup --runner-user R --runner-dir D [--python P] [options]

The probe runs a pull request's model code. With uid isolation it runs as a separate user that
cannot read the runner's processes, tokens or files and cannot write the caches. Run as root
(only --dry-run works without); each step prints one line: done, already (so), would (--dry-run),
skipped, WARN (yours to do; --fix does some) or FAIL. A second run changes nothing.

  probe-user       create the system user (default ${DEFAULT_PROBE_USER}; no login shell, no home), or use --user's
  group            create the group ${PROBE_GROUP}; add the runner user and the probe user to it
  setup-file       write ${SETUP_FILE} (0644) naming the probe user: the Action reads it
  sudoers          a runner that is not root: ${SUDOERS_FILE} (0440, checked with visudo -cf):
                     <runner> ALL=(<probe user>) NOPASSWD:NOSETENV: ALL
                   (no variable passes through sudo: the Action hands the probe a fixed environment with env -i)
  drain-sudoers    a runner service that is not root: ${DRAIN_SUDOERS_FILE} (0440, visudo -cf) with the
                   one rule agent drain/undrain need (no SETENV):
                     <runner> ALL=(root) NOPASSWD: /usr/bin/systemctl stop <its unit>, /usr/bin/systemctl start <its unit>
                   or a line saying why none was installed (no .service: drain by label)
  npu-access       add the probe user to the group of /dev/accel/accel0
  memlock          the runner service's LimitMEMLOCK (the probe inherits it) and sudo's pam_limits
  kernel-cache, reference-cache
                   owned by the runner user, directories 0755, files 0644: the probe reads, never writes
  hf-cache, hf-token
                   the HF hub cache readable and not group/world-writable; a stored HF token 0600
  work-dir         the runner's work dir: group ${PROBE_GROUP}, setgid, not group-writable
  runner-secrets   the runner's .credentials, .credentials_rsaparams and .env unreadable by the probe user
  checkouts        every checkout's .git under the work dir closed to group and others (a persisted token)
  reach            the probe user can search every directory on the way to the caches, work dir, Python
                   (--fix: an ACL entry for the probe user alone on a home, never o+x; o+x elsewhere)
  switch, python   the runner user can start processes as the probe user; P -c "import numpy" works as it
  sandbox          the probe user can start bubblewrap in a user namespace (root: bubblewrap at all);
                   where AppArmor restricts user namespaces (Ubuntu 23.10+) it names the profile to add

Options:
  --user NAME          the probe user (default ${DEFAULT_PROBE_USER})
  --runner-user NAME   the user the runner service runs as (default $SUDO_USER, else this user)
  --runner-dir D       the runner's install dir (with .runner, .service); default ~R/actions-runner
  --work-dir W         the runner's work dir (default D/_work, or .runner's workFolder)
  --cache-dir DIR      the kernel cache root (default $NPU_BLOCK_GATE_CACHE_DIR, else ~R/.cache/npu-block-gate);
                       the reference cache is DIR/reference ($NPU_BLOCK_GATE_REF_CACHE)
  --hf-home DIR        HF_HOME of the runner (default $HF_HOME, else ~R/.cache/huggingface); its hub/ is checked
  --python P           the Python the Action runs the probe with: checked as the probe user
  --fix                repair the HF cache, token files, the runner's credentials and search permission too
  --dry-run            change nothing; say what would change
  --json               the steps as JSON
  --root DIR           system files (/etc, /dev) under DIR (tests, containers; useradd etc. get --prefix DIR)

Exit codes: 0 set up (warnings are printed), 2 bad input or not root (one line), 3 a command or
file operation failed (one line naming it) or a check (switch, python) failed.
`;
var OPTIONS = {
  json: { type: "boolean" },
  root: { type: "string" },
  "cache-dir": { type: "string" },
  "state-dir": { type: "string" },
  "max-bytes": { type: "string" },
  python: { type: "string" },
  path: { type: "string" },
  timeout: { type: "string" },
  dir: { type: "string" },
  "runner-dir": { type: "string" },
  "fork-policy": { type: "string" },
  "cache-max-bytes": { type: "string" },
  "hf-home": { type: "string" },
  offline: { type: "boolean" },
  chain: { type: "boolean" },
  functional: { type: "boolean" },
  "functional-when": { type: "string" },
  "when-unknown": { type: "string" },
  "functional-test": { type: "string" },
  "functional-max-age": { type: "string" },
  "functional-timeout": { type: "string" },
  "drain-on-failure": { type: "boolean" },
  "token-file": { type: "string" },
  label: { type: "string", multiple: true },
  "api-url": { type: "string" },
  textfile: { type: "string" },
  reason: { type: "string" },
  force: { type: "boolean" },
  user: { type: "string" },
  "runner-user": { type: "string" },
  "work-dir": { type: "string" },
  fix: { type: "boolean" },
  "dry-run": { type: "boolean" },
  help: { type: "boolean", short: "h" }
};
var FUNCTIONAL_OPTS = ["functional-test", "functional-max-age", "functional-timeout"];
var ALLOWED = {
  setup: ["json", "root", "user", "runner-user", "runner-dir", "work-dir", "cache-dir", "hf-home", "python", "fix", "dry-run", "help"],
  doctor: ["json", "root", "python", "cache-dir", "state-dir", "functional", ...FUNCTIONAL_OPTS, "runner-dir", "help"],
  status: ["json", "root", "cache-dir", "state-dir", "runner-dir", "help"],
  fleet: ["json", "help"],
  drain: ["root", "runner-dir", "token-file", "label", "api-url", "reason", "state-dir", "json", "help"],
  undrain: ["root", "runner-dir", "token-file", "label", "api-url", "state-dir", "force", "functional-test", "functional-timeout", "json", "help"],
  "cache stats": ["json", "cache-dir", "help"],
  "cache gc": ["json", "cache-dir", "max-bytes", "help"],
  "lock status": ["json", "root", "path", "help"],
  "lock wait": ["json", "root", "path", "timeout", "help"],
  "hooks install": [
    "dir",
    "runner-dir",
    "fork-policy",
    "cache-max-bytes",
    "python",
    "hf-home",
    "offline",
    "chain",
    "state-dir",
    "functional-when",
    "functional-max-age",
    "when-unknown",
    "drain-on-failure",
    "token-file",
    "label",
    "api-url",
    "textfile",
    "help"
  ],
  "hook job-started": ["root", "python", "cache-dir", "state-dir", "fork-policy", "functional-when", "when-unknown", ...FUNCTIONAL_OPTS, "runner-dir", "help"],
  "hook job-completed": [
    "root",
    "dir",
    "cache-dir",
    "cache-max-bytes",
    "state-dir",
    "runner-dir",
    "drain-on-failure",
    "token-file",
    "label",
    "api-url",
    "textfile",
    "functional-when",
    ...FUNCTIONAL_OPTS,
    "help"
  ]
};
var GROUPS = {
  cache: ["stats", "gc"],
  lock: ["status", "wait"],
  hooks: ["install"],
  hook: ["job-started", "job-completed"]
};
function parseAgent(argv) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (e) {
    throw new InputError(`${oneLine(e).replace(/^TypeError \[[A-Z_]+\]: /, "")} (see npu-block-gate agent --help)`);
  }
  const values = parsed.values;
  const pos = parsed.positionals;
  if (!pos.length) return { sub: "help", values, files: [] };
  if (pos[0] === "help") return { sub: "help", values, files: [] };
  let sub = pos[0];
  let rest = pos.slice(1);
  const group = GROUPS[sub];
  if (group) {
    if (!rest.length) {
      if (values.help) return { sub: "help", values, files: [] };
      throw new InputError(`agent ${sub} needs ${group.join(" or ")} (see npu-block-gate agent --help)`);
    }
    if (!group.includes(rest[0])) throw new InputError(`unknown ${sub} command ${JSON.stringify(rest[0])} (agent ${sub}: ${group.join(", ")})`);
    sub = `${sub} ${rest[0]}`;
    rest = rest.slice(1);
  }
  if (!(sub in ALLOWED)) throw new InputError(`unknown agent command ${JSON.stringify(sub)} (agent commands: setup, doctor, status, fleet, drain, undrain, cache stats|gc, lock status|wait, hooks install)`);
  if (rest.length && sub !== "fleet") throw new InputError(`unexpected argument ${JSON.stringify(rest[0])} (see npu-block-gate agent --help)`);
  for (const k of Object.keys(values)) {
    if (!ALLOWED[sub].includes(k)) throw new InputError(`option --${k} does not apply to agent ${sub} (see npu-block-gate agent --help)`);
  }
  return { sub, values, files: sub === "fleet" ? rest : [] };
}
function sizeOption(name, v) {
  if (v === void 0) return DEFAULT_MAX_BYTES;
  const n = parseSize(v);
  if (n === null) throw new InputError(`--${name} ${JSON.stringify(v)}: not a size (bytes, or a number with K, M, G or T)`);
  return n;
}
function secondsOption(name, v, dflt) {
  if (v === void 0) return dflt;
  const n = Number(v);
  if (!v.trim() || !Number.isFinite(n) || n < 0) throw new InputError(`--${name} ${JSON.stringify(v)}: seconds (a number >= 0)`);
  return n;
}
function forkPolicy(v) {
  if (v === void 0) return DEFAULT_FORK_POLICY;
  if (!FORK_POLICIES.includes(v)) throw new InputError(`--fork-policy ${JSON.stringify(v)}: ${FORK_POLICIES.join(", ")}`);
  return v;
}
function whenUnknown(v) {
  if (v === void 0) return DEFAULT_WHEN_UNKNOWN;
  if (v !== "refuse" && v !== "run") throw new InputError(`--when-unknown ${JSON.stringify(v)}: refuse or run`);
  return v;
}
function functionalWhen(v) {
  if (v === void 0) return null;
  if (v !== "never" && v !== "auto" && v !== "always") throw new InputError(`--functional-when ${JSON.stringify(v)}: auto, always or never`);
  return v;
}
function testName(v) {
  if (v === void 0) return null;
  if (!/^[a-z][a-z0-9-]*$/.test(v)) throw new InputError(`--functional-test ${JSON.stringify(v)}: an xrt-smi validate test name (latency, verify, throughput, ...)`);
  return v;
}
function needRunnerDir(v, sub) {
  if (!v["runner-dir"]) throw new InputError(`agent ${sub} needs --runner-dir (the runner's install dir, with its .runner file)`, "--runner-dir");
  return resolve8(v["runner-dir"]);
}
var json = (x) => JSON.stringify(x, null, 2) + "\n";
async function agentMain(argv, out = process.stdout, err = process.stderr, deps = {}) {
  try {
    const { sub, values, files } = parseAgent(argv);
    if (sub === "setup" && values.help) {
      out.write(SETUP_HELP);
      return EXIT.pass;
    }
    if (sub === "help" || values.help) {
      out.write(AGENT_HELP);
      return EXIT.pass;
    }
    const m = new Machine({ ...deps, root: values.root ?? deps.root });
    const env = m.env;
    const cacheDir = values["cache-dir"] ?? null;
    const stateDir = values["state-dir"] ? resolve8(values["state-dir"]) : defaultStateDir(m);
    const functional = {
      functionalTest: testName(values["functional-test"]),
      functionalMaxAgeS: secondsOption("functional-max-age", values["functional-max-age"], FUNCTIONAL_MAX_AGE_S),
      functionalTimeoutS: secondsOption("functional-timeout", values["functional-timeout"], FUNCTIONAL_TIMEOUT_S)
    };
    const runnerDir = values["runner-dir"] ? resolve8(values["runner-dir"]) : null;
    const service = serviceName(runnerDir);
    const runner = m.uid === 0 ? runnerAccount(m, runnerDir) : null;
    switch (sub) {
      case "setup": {
        const dryRun = !!values["dry-run"];
        let started = false;
        const head = () => {
          if (!started && !values.json) out.write(setupHeader(m.root, dryRun));
          started = true;
        };
        const r = setup(m, {
          user: values.user ?? null,
          runnerUser: values["runner-user"] ?? null,
          runnerDir: values["runner-dir"] ?? null,
          workDir: values["work-dir"] ?? null,
          cacheDir,
          hfHome: values["hf-home"] ?? null,
          python: values.python ?? null,
          fix: !!values.fix,
          dryRun,
          uid: m.uid,
          fs: deps.setupFs,
          onStep: values.json ? void 0 : (st) => {
            head();
            out.write(renderStep(st));
          }
        });
        head();
        out.write(values.json ? json(r) : renderSummary(r));
        return r.exit_code;
      }
      case "doctor": {
        const { checks } = await doctorReport(m, { cacheDir, python: values.python ?? null, stateDir, functional: values.functional ? "always" : "never", service, runnerAccount: runner, ...functional });
        const s = summarize(checks);
        const code = s.fail ? EXIT.infra : EXIT.pass;
        out.write(values.json ? json({ root: m.root, checks, summary: s, exit_code: code }) : renderChecks(checks, m.root));
        return code;
      }
      case "status": {
        const s = status(m, { cacheDir, stateDir, runnerDir });
        out.write(values.json ? json(s) : renderStatus(s));
        return EXIT.pass;
      }
      case "fleet": {
        if (!files.length) throw new InputError("agent fleet needs the agent status --json of each runner: files, or - for stdin (see npu-block-gate agent --help)");
        const inputs = files.map((f) => {
          if (f === "-") return { source: "stdin", text: deps.stdin ? deps.stdin() : readFileSync9(0, "utf8") };
          try {
            return { source: f, text: readFileSync9(f, "utf8") };
          } catch (e) {
            throw new InputError(`cannot read it (${oneLine(e)})`, f);
          }
        });
        const rows = fleetRows(inputs);
        out.write(values.json ? json(rows) : renderFleet(rows));
        return EXIT.pass;
      }
      case "drain": {
        const r = await drain(m, {
          runnerDir: needRunnerDir(values, sub),
          tokenFile: values["token-file"] ?? null,
          labels: values.label ?? [],
          apiUrl: values["api-url"] ?? null,
          stateDir,
          reason: values.reason ?? "drained by hand (npu-block-gate agent drain)",
          fromHook: false
        });
        out.write(values.json ? json(r.record) : r.lines.join("\n") + `
${r.record.state === "drained" ? "drained" : "not drained yet"}: ${r.record.reason}; undo with npu-block-gate agent undrain
`);
        return EXIT.pass;
      }
      case "undrain": {
        const r = await undrain(m, {
          runnerDir: needRunnerDir(values, sub),
          tokenFile: values["token-file"] ?? null,
          labels: values.label ?? [],
          apiUrl: values["api-url"] ?? null,
          stateDir,
          force: !!values.force,
          functionalTest: functional.functionalTest,
          functionalTimeoutS: functional.functionalTimeoutS
        });
        const lines = [r.functional ? `functional probe: ${r.functional.detail}` : "functional probe skipped (--force)", ...r.lines];
        out.write(values.json ? json(r) : lines.join("\n") + "\n");
        return EXIT.pass;
      }
      case "cache stats": {
        const s = cacheStats(cacheDir ?? defaultCacheRoot(env));
        out.write(values.json ? json(s) : renderStats(s));
        return EXIT.pass;
      }
      case "cache gc": {
        const g = cacheGc(cacheDir ?? defaultCacheRoot(env), sizeOption("max-bytes", values["max-bytes"]));
        out.write(values.json ? json(g) : renderGc(g));
        return EXIT.pass;
      }
      case "lock status": {
        const s = lockState(m, npuLockPath(env, values.path));
        out.write(values.json ? json({ ...s, free: !s.holder }) : renderLockStatus(s));
        return EXIT.pass;
      }
      case "lock wait": {
        const path = npuLockPath(env, values.path);
        const t = values.timeout === void 0 ? DEFAULT_WAIT_SECONDS : Number(values.timeout);
        if (!Number.isFinite(t) || t < 0 || values.timeout?.trim() === "") throw new InputError(`--timeout ${JSON.stringify(values.timeout)}: seconds (a number >= 0)`);
        if (!path) {
          out.write(values.json ? json({ path, free: true, waited_s: 0, method: "none", holder: null }) : "NPU lock off (NPU_BLOCK_GATE_NPU_LOCK=none)\n");
          return EXIT.pass;
        }
        const progress = values.json ? err : out;
        const r = await waitLock(m, path, Math.round(t * 1e3), (line) => progress.write(line + "\n"));
        out.write(values.json ? json(r) : r.free ? `${path}: free${r.waited_s ? ` after ${r.waited_s}s` : ""}
` : `${path}: still ${r.holder} after ${r.waited_s}s (timeout)
`);
        return r.free ? EXIT.pass : EXIT.infra;
      }
      case "hooks install": {
        const report = installHooks({
          dir: values.dir ?? defaultHooksDir(m),
          runnerDir: values["runner-dir"] ?? null,
          forkPolicy: forkPolicy(values["fork-policy"]),
          cacheMaxBytes: values["cache-max-bytes"] === void 0 ? null : (sizeOption("cache-max-bytes", values["cache-max-bytes"]), values["cache-max-bytes"]),
          self: deps.self ?? selfCommand(),
          python: values.python ?? null,
          hfHome: values["hf-home"] ?? null,
          offline: !!values.offline,
          chain: !!values.chain,
          stateDir: values["state-dir"] ?? null,
          functionalWhen: functionalWhen(values["functional-when"]),
          functionalMaxAge: values["functional-max-age"] === void 0 ? null : String(secondsOption("functional-max-age", values["functional-max-age"], FUNCTIONAL_MAX_AGE_S)),
          whenUnknown: values["when-unknown"] === void 0 ? null : whenUnknown(values["when-unknown"]),
          drainOnFailure: !!values["drain-on-failure"],
          tokenFile: values["token-file"] ?? null,
          labels: values.label ?? [],
          apiUrl: values["api-url"] ?? null,
          textfile: values.textfile ?? null,
          env
        });
        out.write(report);
        return EXIT.pass;
      }
      case "hook job-started": {
        const r = await jobStarted(m, {
          cacheDir,
          python: values.python ?? null,
          forkPolicy: forkPolicy(values["fork-policy"]),
          stateDir,
          service,
          runnerAccount: runner,
          functional: functionalWhen(values["functional-when"]) ?? "auto",
          whenUnknown: whenUnknown(values["when-unknown"]),
          ...functional
        });
        out.write(r.out);
        return r.code;
      }
      case "hook job-completed": {
        const r = await jobCompleted(m, {
          dir: values.dir ?? defaultHooksDir(m),
          cacheDir,
          maxBytes: sizeOption("cache-max-bytes", values["cache-max-bytes"]),
          stateDir,
          runnerDir: values["runner-dir"] ?? null,
          drainOnFailure: !!values["drain-on-failure"],
          tokenFile: values["token-file"] ?? null,
          labels: values.label ?? [],
          apiUrl: values["api-url"] ?? null,
          textfile: values.textfile ?? null,
          functional: functionalWhen(values["functional-when"]) ?? "auto",
          ...functional
        });
        out.write(r.out);
        return r.code;
      }
    }
    throw new InputError(`unknown agent command ${JSON.stringify(sub)}`);
  } catch (e) {
    const code = e instanceof GateError ? e.exitCode : EXIT.infra;
    err.write(`npu-block-gate: ${code === EXIT.input ? "error" : "error (infrastructure)"}: ${oneLine(e)}
`);
    return code;
  }
}
export {
  ALLOWED,
  agentMain
};
