// The amdxdna kernel-log signatures: what a line says about the NPU, how bad it is, and its own fix.
// Built from the drivers' own format strings (data only: the text the log will contain). Sources,
// cited beside each entry:
//   in-tree: amd/xdna-driver@856409ca drivers/accel/amdxdna/ (the upstream driver, mirrored from the
//            same path in the Linux tree, where Linux >= 6.14 ships it: torvalds/linux
//            drivers/accel/amdxdna/). XDNA_ERR is drm_err(&xdna->ddev, "%s: " fmt, __func__)
//            (amdxdna_pci_drv.h:26): "amdxdna <bdf>: [drm] *ERROR* <func>: <msg>".
//   OOT:     amd/xdna-driver@856409ca src/driver/amdxdna/ (the out-of-tree driver). XDNA_ERR is
//            dev_err_ratelimited(dev, "%s: " fmt, __func__) (amdxdna_drm.h:28): "amdxdna <bdf>: <func>: <msg>".
//   The mailbox's MB_ERR/MB_DBG prefix "xdna_mailbox.<irq>: " (amdxdna_mailbox.c, both trees).
//   Kernel core: drivers/base/firmware_loader/main.c _request_firmware, drivers/base/dd.c
//   call_driver_probe, drivers/iommu/amd/iommu.c amd_iommu_report_page_fault (torvalds/linux).
//
// Severity: fail = the device is unusable until the fix (fails a job unless a functional probe
// passes after it); warn = the device may be hung (the functional probe decides); host = the
// machine around the NPU (a warning with its fix, never fails a job).

export type Severity = 'fail' | 'warn' | 'host';

export type SignatureId =
  | 'firmware-missing' | 'firmware-too-old' | 'hypervisor' | 'smu-power' | 'power-cycle-failed' | 'probe-failed'
  | 'hw-init-failed' | 'fw-not-alive' | 'mgmt-timeout' | 'mgmt-channel-released' | 'ctx-connect' | 'channel-bad-state'
  | 'bad-message-id' | 'reset-skipped' | 'iommu-fault' | 'fw-command-failed' | 'hwctx-alloc-failed' | 'hwctx-init-failed'
  | 'context-create-failed' | 'tdr' | 'fw-timeout-capture' | 'ctx-restart-rejected' | 'sva-bind-failed' | 'pasid-unavailable'
  | 'firmware-protocol' | 'psp-not-ready' | 'psp-start-failed' | 'smu-cmd' | 'smu-power-on' | 'resume-failed';

/** One signature found on one line: what it means there and what to do. */
export interface SignatureHit { id: SignatureId; severity: Severity; what: string; fix: string }

interface Signature {
  id: SignatureId;
  severity: Severity;
  re: RegExp;
  what: (m: RegExpExecArray) => string;
  fix: (m: RegExpExecArray, bdf: string | null) => string;
}

// ---- the fixes, one text each

export const RELOAD = 'sudo modprobe -r amdxdna && sudo modprobe amdxdna';

export const powerCycleFix = (bdf: string | null) =>
  `power-cycle the runner (a cold boot: mlir-air's CI finds a module reload does not bring the NPU back), or remove and rescan the NPU's PCI device: echo 1 | sudo tee /sys/bus/pci/devices/${bdf ?? '<bdf>'}/remove && echo 1 | sudo tee /sys/bus/pci/rescan`;

const RELOAD_FIX = `reload the driver: ${RELOAD}; if /dev/accel does not come back or the log then says "Access power failed", power-cycle the runner`;

/** The management channel is gone after a mailbox timeout (both drivers destroy it on -ETIME). */
const MGMT_FIX = `the driver dropped the NPU's management channel, so no hardware context can be created until the module is reloaded: ${RELOAD}; if /dev/accel does not come back, power-cycle the runner`;

/** Only a PCI remove/rescan (or a cold boot) brings an NPU back from an IOMMU fault; a module reload does not. */
const pciRescanFix = (bdf: string | null) =>
  `remove and rescan the NPU's PCI device (a module reload does not bring it back after an IOMMU fault): echo 1 | sudo tee /sys/bus/pci/devices/${bdf ?? '<bdf>'}/remove && echo 1 | sudo tee /sys/bus/pci/rescan; else power-cycle the runner`;

/** A warning the functional probe settles: it passes (the warning clears) or it fails (this fix). */
export const PROBE_DECIDES = `npu-block-gate runs the functional probe on it (agent doctor --functional by hand); if the probe fails: ${RELOAD}, else power-cycle the runner`;

/** The fix for a device failure no signature explains (a functional probe that fails on a clean log). */
export const UNEXPLAINED_FIX = `the NPU does not run a command (userspace sees DRM_IOCTL_AMDXDNA_EXEC_CMD err=-5 or a timeout): ${RELOAD}; if /dev/accel does not come back or the log then says "Access power failed", power-cycle the runner`;

const firmwareFix = (file: string, err: string | undefined) => {
  const dir = file.endsWith('/') ? file : file.replace(/[^/]*$/, '');
  const what = file.endsWith('/') ? `an NPU firmware file in /lib/firmware/${file} (the driver tries npu.dev.sbin, npu_7.sbin, npu.sbin)` : `the NPU firmware /lib/firmware/${file}`;
  const why = err === '-2' ? 'it is not there (error -2, ENOENT)' : `the kernel could not load it (error ${err ?? '?'})`;
  return `${why}: install ${what} (the linux-firmware package's amdnpu/, or the firmware amd/xdna-driver's packages put in /lib/firmware/${dir}), then ${RELOAD}`;
};

// ---- amdxdna's mailbox messages, for a readable "command ... failed" line

/** aie2_msg_priv.h enum aie2_msg_opcode (in-tree :10-11, OOT :12-13). */
const OPCODES: Record<number, string> = { 0x2: 'create context', 0x3: 'destroy context' };
/** aie2_msg_priv.h AIE2_STATUS_MGMT_ERT_* (in-tree :68-75, OOT :79-86). */
const STATUSES: Record<number, string> = {
  0x2000001: 'ERT self test failure', 0x2000002: 'ERT hash mismatch', 0x2000003: 'ERT not available', 0x2000004: 'ERT invalid parameter',
  0x2000005: 'ERT suspend failure', 0x2000006: 'ERT busy', 0x2000007: 'ERT application active',
};

// Ordered worst first: a line takes the first signature it matches, and a report leads with the worst.
const SIGNATURES: Signature[] = [
  // kernel firmware_loader/main.c _request_firmware: dev_warn(device, "Direct firmware load for %s failed with error %d\n") (OOT's
  // request_firmware warns; the in-tree driver's firmware_request_nowarn does not);
  // then amdxdna "failed to request_firmware %s, ret %d": in-tree aie2_pci.c:596 (names the directory), OOT aie2_pci.c:515 (the file).
  {
    id: 'firmware-missing', severity: 'fail',
    re: /Direct firmware load for (\S+) failed with error (-?\d+)|failed to request_firmware (\S+), ret (-?\d+)/,
    what: (m) => `the NPU firmware ${m[1] ?? m[3]} could not be loaded (error ${m[2] ?? m[4]})`,
    fix: (m) => firmwareFix(m[1] ?? m[3], m[2] ?? m[4]),
  },
  // OOT aie2_pci.c:88: XDNA_ERR(xdna, "Firmware %d.%d below minimum %d.%d", ...).
  {
    id: 'firmware-too-old', severity: 'fail', re: /Firmware (\d+)\.(\d+) below minimum (\d+)\.(\d+)/,
    what: (m) => `the NPU firmware (protocol ${m[1]}.${m[2]}) is older than this driver needs (${m[3]}.${m[4]})`,
    fix: () => `install the NPU firmware that matches this amdxdna (update linux-firmware's amdnpu/ or amd/xdna-driver's firmware package), then ${RELOAD}`,
  },
  // A firmware that speaks another mailbox protocol than this driver: OOT before ae559d3e (#922) aie2_pci.c:95
  // aie2_check_protocol "Incompatible firmware protocol major %d minor %d", :105 "Firmware minor version smaller than
  // supported", and its caller :261 "Check protocol version failed". A power-cycle does not change the firmware file.
  {
    id: 'firmware-protocol', severity: 'fail', re: /Incompatible firmware protocol|Firmware minor version smaller than supported|Check protocol version failed/,
    what: () => 'the NPU firmware speaks another mailbox protocol than this amdxdna (a firmware/driver mismatch)',
    fix: () => `install the NPU firmware that matches this amdxdna (linux-firmware's amdnpu/ for the in-tree driver, amd/xdna-driver's firmware package for the out-of-tree one), then ${RELOAD}; a power-cycle does not change the firmware`,
  },
  // in-tree aie2_pci.c:570: XDNA_ERR(xdna, "Running under hypervisor not supported").
  {
    id: 'hypervisor', severity: 'host', re: /Running under hypervisor not supported/,
    what: () => 'amdxdna refuses to drive the NPU inside a virtual machine',
    fix: () => 'run the runner on the NPU host itself (bare metal): the in-tree amdxdna does not support a hypervisor',
  },
  // in-tree aie_smu.c:83 (aie_smu_init): drm_err(smu->ddev, "Access power failed, ret %d"); OOT aie2_smu.c:145 (aie2_smu_start).
  { id: 'smu-power', severity: 'fail', re: /Access power failed/, what: () => 'the SMU could not power the NPU (Access power failed)', fix: (_m, bdf) => powerCycleFix(bdf) },
  // ---- A failed wake: the in-tree driver autosuspends the NPU after 5 s idle and resumes it through aie2_hw_resume ->
  // aie2_hw_start before every job (in-tree aie2_pci.c:1431-1433 .resume/.runtime_resume = aie2_hw_resume). A start that
  // fails at the SMU or the PSP leaves the NPU off; the lines a maintainer posted in amd/xdna-driver PR #1458, each from:
  // in-tree aie_smu.c:89 (aie_smu_init): drm_err(smu->ddev, "Power on failed, ret %d") -> "[drm] *ERROR* Power on failed, ret -110";
  // OOT aie2_smu.c:151 (aie2_smu_start) and aie4_smu.c:74: XDNA_ERR "Power on failed, ret %d"; both callers then log
  // in-tree aie2_pci.c:378 / OOT aie2_pci.c:382 (aie2_hw_start): XDNA_ERR "failed to init smu, ret %d".
  { id: 'smu-power-on', severity: 'fail', re: /Power on failed, ret|failed to init smu/, what: () => 'the SMU could not power the NPU on (its wake failed)', fix: (_m, bdf) => powerCycleFix(bdf) },
  // in-tree aie_smu.c:58 (aie_smu_exec): drm_err(smu->ddev, "smu cmd %d timed out", reg_cmd); OOT aie_smu.c:39 (the same
  // text). (Its "smu cmd %d failed, 0x%x", :66 / :47, is an answer, not a hang: no signature; as an unexplained error
  // line it still has the functional probe run.)
  { id: 'smu-cmd', severity: 'fail', re: /smu cmd (\d+) timed out/, what: (m) => `an SMU command (${m[1]}) timed out (the NPU's power controller does not answer)`, fix: (_m, bdf) => powerCycleFix(bdf) },
  // in-tree aie_psp.c:70 and :87 (psp_exec, psp_start): drm_err(psp->ddev, "PSP is not ready, ret 0x%x"); OOT aie2_psp.c:43
  // dev_err(psp->dev, ...) and aie4_psp.c:38/:55 (the same text).
  { id: 'psp-not-ready', severity: 'fail', re: /PSP is not ready/, what: () => 'the NPU\'s security processor (PSP) is not ready', fix: (_m, bdf) => powerCycleFix(bdf) },
  // in-tree aie2_pci.c:384 (aie2_hw_start): XDNA_ERR(xdna, "failed to start psp, ret %d"); OOT aie2_pci.c:388, aie4_pci.c:420.
  { id: 'psp-start-failed', severity: 'fail', re: /failed to start psp/, what: () => 'the NPU firmware could not be started (failed to start psp)', fix: (_m, bdf) => powerCycleFix(bdf) },
  // in-tree aie2_pci.c:478 (aie2_hw_resume): XDNA_ERR(xdna, "Start hardware failed, %d") -> "aie2_hw_resume: Start hardware failed, -110";
  // then the job's ioctl: in-tree amdxdna_ctx.c:472/:513/:707 XDNA_ERR "Resume failed, ret %d" (amdxdna_pm_resume_get failed);
  // OOT amdxdna_pm.c:48 (amdxdna_pm_resume_get): XDNA_ERR "Resume failed: %d".
  { id: 'resume-failed', severity: 'fail', re: /Start hardware failed|\bResume failed(, ret|:) -?\d+/, what: () => 'the NPU did not wake from runtime suspend (aie2_hw_resume failed)', fix: (_m, bdf) => powerCycleFix(bdf) },
  // in-tree aie2_pci.c:536 (aie2_hw_reset): "NPU power-cycle start failed: %d"; :547 "resume failed after NPU reset: %d".
  { id: 'power-cycle-failed', severity: 'fail', re: /NPU power-cycle start failed|resume failed after NPU reset/, what: () => "the driver's in-kernel NPU power-cycle failed", fix: (_m, bdf) => powerCycleFix(bdf) },
  // drivers/base/dd.c call_driver_probe: dev_err(dev, "probe with driver %s failed with error %d\n").
  // Before Linux 6.1 (drivers/base/dd.c really_probe): pr_warn("%s: probe of %s failed with error %d\n", drv->name, dev_name(dev), ret).
  { id: 'probe-failed', severity: 'fail', re: /probe with driver amdxdna failed|amdxdna: probe of \S+ failed with error/, what: () => 'the driver could not probe the NPU', fix: (_m, bdf) => powerCycleFix(bdf) },
  // in-tree amdxdna_pci_drv.c:508 (amdxdna_probe): "Hardware init failed, ret %d"; OOT amdxdna_pci_drv.c:153.
  // Older out-of-tree drivers spelled it "hardware init failed" (lower case).
  { id: 'hw-init-failed', severity: 'fail', re: /[Hh]ardware init failed/, what: () => 'NPU hardware init failed', fix: (_m, bdf) => powerCycleFix(bdf) },
  // in-tree aie2_pci.c:390 (aie2_hw_start): "firmware is not alive".
  // In-tree, aie2_get_mgmt_chann_info fails there too when aie_check_protocol (aie.c:106) finds no entry for the firmware's
  // protocol version: a mismatch the power-cycle does not fix, so the fix names both.
  { id: 'fw-not-alive', severity: 'fail', re: /firmware is not alive/, what: () => 'the NPU firmware is not alive', fix: (_m, bdf) => `${powerCycleFix(bdf)}; if it is not alive after a cold boot either, the firmware may not match this amdxdna: install the NPU firmware that matches it (linux-firmware's amdnpu/), then ${RELOAD}` },
  // in-tree amdxdna_mailbox_helper.c:71 (xdna_send_msg_wait): "Wait for completion timeout", returns -ETIME; its caller
  // aie.c:72-73 (aie_send_mgmt_msg_wait) then destroys the management channel. OOT: amdxdna_mailbox_helper.c:57, aie2_message.c:61-65.
  { id: 'mgmt-timeout', severity: 'fail', re: /Wait for completion timeout/, what: () => 'a management mailbox message timed out (the driver then drops the channel)', fix: () => MGMT_FIX },
  // OOT amdxdna_mailbox.c:959: MB_DBG(mb_chann, "Mailbox channel released type %d irq: %d") (dynamic debug); type 0 is
  // MB_CHANNEL_MGMT (amdxdna_mailbox.h:97): the management channel is gone.
  { id: 'mgmt-channel-released', severity: 'fail', re: /Mailbox channel released type 0\b/, what: () => "the NPU's management mailbox channel was released", fix: () => MGMT_FIX },
  // OOT aie2_ctx_runqueue.c:322 (part_ctx_start): XDNA_ERR(xdna, "%s connect failed, err %d", ctx->name, err).
  { id: 'ctx-connect', severity: 'fail', re: /part_ctx_start:.*connect failed/, what: () => 'a hardware context could not connect', fix: () => RELOAD_FIX },
  // in-tree amdxdna_mailbox.c:407 "Channel in bad state, work aborted", :467 "Channel in bad state"; OOT :439, :664.
  { id: 'channel-bad-state', severity: 'fail', re: /Channel in bad state/, what: () => 'a mailbox channel is in a bad state', fix: () => RELOAD_FIX },
  // in-tree amdxdna_mailbox.c:296 "Bad message ID 0x%x"; OOT :218 (the channel goes to a bad state after it).
  { id: 'bad-message-id', severity: 'fail', re: /Bad message ID/, what: () => 'the mailbox got a bad message ID', fix: () => RELOAD_FIX },
  // in-tree aie2_pci.c:519 (aie2_hw_reset): XDNA_WARN "NPU reset skipped: last reset %d ms ago": the firmware is unhealthy
  // again within the reset window and the driver leaves it so.
  { id: 'reset-skipped', severity: 'fail', re: /NPU reset skipped: last reset/, what: () => 'the firmware wedged again within the in-kernel reset window and was left so', fix: () => RELOAD_FIX },
  // drivers/iommu/amd/iommu.c amd_iommu_report_page_fault: pci_err(pdev, "Event logged [IO_PAGE_FAULT domain=0x%04x address=0x%llx
  // flags=0x%04x]"), or pr_err_ratelimited("Event logged [IO_PAGE_FAULT device=%04x:%02x:%02x.%x ...]") when no driver owns it.
  { id: 'iommu-fault', severity: 'warn', re: /IO_PAGE_FAULT/, what: () => "the NPU's DMA hit an unmapped address (IO_PAGE_FAULT)", fix: (_m, bdf) => pciRescanFix(bdf) },
  // in-tree aie.c:76 (aie_send_mgmt_msg_wait): "command opcode 0x%x failed, status 0x%x"; OOT aie2_message.c:69.
  {
    id: 'fw-command-failed', severity: 'warn', re: /command opcode 0x([0-9a-f]+) failed, status 0x([0-9a-f]+)/i,
    what: (m) => {
      const op = parseInt(m[1], 16);
      const st = parseInt(m[2], 16);
      return `the NPU firmware refused a command (${OPCODES[op] ?? `opcode 0x${m[1]}`}: ${STATUSES[st] ?? `status 0x${m[2]}`})`;
    },
    fix: () => PROBE_DECIDES,
  },
  // in-tree aie2_ctx.c:841 (aie2_hwctx_init): "Alloc hw resource failed, ret %d"; OOT aie2_hwctx.c:124.
  { id: 'hwctx-alloc-failed', severity: 'warn', re: /Alloc hw resource failed/, what: () => 'a hardware context got no NPU columns', fix: () => `if agent status shows another process holding /dev/accel, that one holds the columns; otherwise ${PROBE_DECIDES}` },
  // in-tree amdxdna_ctx.c:333 (amdxdna_drm_create_hwctx_ioctl): "Init hwctx failed, ret %d".
  { id: 'hwctx-init-failed', severity: 'warn', re: /Init hwctx failed/, what: () => 'a hardware context could not be created', fix: () => PROBE_DECIDES },
  // in-tree aie2_pci.c:267 (aie2_xrs_load): "create context failed, ret %d"; OOT aie2_hwctx.c:31.
  { id: 'context-create-failed', severity: 'warn', re: /create context failed, ret/, what: () => 'the firmware could not create a context', fix: () => PROBE_DECIDES },
  // in-tree aie2_tdr.c:59 and aie2_ctx.c:71 "TDR timeout detected", aie2_tdr.c:159 "Device isn't making progress";
  // OOT aie2_tdr.c:55-56 "Device isn't making progress... Count %d timeout %u dump_only %d". TDR = timeout detection and recovery.
  { id: 'tdr', severity: 'warn', re: /TDR timeout detected|Device isn't making progress/, what: () => "an NPU command timed out (the driver's TDR)", fix: () => PROBE_DECIDES },
  // in-tree aie2_ctx.c:269 (aie2_set_cmd_timeout) and OOT aie2_ctx.c:75: "Firmware timeout state capture:".
  { id: 'fw-timeout-capture', severity: 'warn', re: /Firmware timeout state capture/, what: () => 'a command timed out in the firmware', fix: () => PROBE_DECIDES },
  // in-tree aie2_ctx.c:561-563 (aie2_sched_job_timedout): XDNA_WARN "NPU context restart rejected (ret %d) without fatal report - not power-cycling".
  { id: 'ctx-restart-rejected', severity: 'warn', re: /context restart rejected/, what: () => 'the firmware rejected a context restart after a timeout', fix: () => PROBE_DECIDES },
  // in-tree amdxdna_pci_drv.c:131 (amdxdna_sva_init, from amdxdna_drm_open): "SVA bind device failed, ret %ld"; OOT amdxdna_drm.c:42.
  {
    id: 'sva-bind-failed', severity: 'host', re: /SVA bind device failed/, what: () => 'the IOMMU gave a process no shared virtual addressing for the NPU',
    fix: () => 'turn the IOMMU on (BIOS: IOMMU / AMD-Vi enabled) and boot without amd_iommu=off: amdxdna binds every process that opens the NPU through IOMMU SVA',
  },
  // in-tree amdxdna_pci_drv.c:183: XDNA_WARN "PASID not available for pid %d" (the driver falls back to its carveout).
  {
    id: 'pasid-unavailable', severity: 'host', re: /PASID not available for pid/, what: () => 'the IOMMU had no PASID for a process (the driver fell back to its carveout memory)',
    fix: () => 'turn the IOMMU on with PASID support (BIOS: IOMMU / AMD-Vi enabled) so every process gets one',
  },
];

export const SIGNATURE_IDS: SignatureId[] = SIGNATURES.map((s) => s.id);

/** The signature of one kernel log line (the caller knows it is an NPU line), or null. */
export function matchSignature(line: string, bdf: string | null = null): SignatureHit | null {
  for (const s of SIGNATURES) {
    const m = s.re.exec(line);
    if (m) return { id: s.id, severity: s.severity, what: s.what(m), fix: s.fix(m, bdf) };
  }
  return null;
}

/** A driver (re)load: drm_dev_register's "[drm] Initialized amdxdna_accel_driver ... on minor N" (the name: in-tree amdxdna_pci_drv.c:406). */
export function isDriverLoad(line: string): boolean {
  return /\[drm\] Initialized amdxdna/i.test(line);
}

/**
 * The driver recovering the NPU itself: in-tree aie2_pci.c:531 (aie2_hw_reset) XDNA_WARN "NPU firmware unhealthy:
 * power-cycling NPU", printed as it power-cycles the NPU through the SMU. The driver logs no line when that
 * succeeds; a failure logs "NPU power-cycle start failed" or "resume failed after NPU reset" after it (a signature).
 */
export function isRecovery(line: string): boolean {
  return /aie2_hw_reset: NPU firmware unhealthy: power-cycling NPU/i.test(line);
}

/**
 * An NPU line that reports an error but matches no signature (a new driver's message, a format this
 * table does not know): the in-tree driver's drm_err marker, or an error word. The functional probe
 * decides what it means; nothing here calls it harmless.
 */
export function isErrorLine(line: string): boolean {
  if (isDriverLoad(line) || isRecovery(line)) return false;
  return /\*ERROR\*|\b(fail(ed|s|ure)?|error|timed out|timeout|not ready|unhealthy|invalid|bad state)\b/i.test(line);
}
