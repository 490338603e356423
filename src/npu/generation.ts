// Which NPU generation a record was made on (DESIGN.md "Fleet"): Phoenix, Hawk Point, Strix,
// Krackan and later. The facts are contract.json's `npu` table, shared with the probe, which reads
// the PCI ids and xrt-smi on the NPU host; this side names, validates and keys by them. Pure.
import { CONTRACT } from '../contract.ts';

interface Generation {
  /** Stable key of history rows and baselines: "phoenix", "strix", ... */
  id: string;
  /** For people: "Phoenix", "Strix Halo", ... */
  name: string;
  /** The amdxdna driver's family: "npu1", "npu4", ... */
  family: string;
}

interface Entry extends Generation { pci: string[]; names: string[]; refines?: string; cpu?: string }

const TABLE: readonly Entry[] = CONTRACT.npu.generations as Entry[];

/** What a generation id must look like (a record from a run dir is checked against this). */
export const GENERATION_ID_RE = /^[a-z0-9][a-z0-9-]{0,31}$/;

/** The row key of a run with no NPU (the emulated runtime). */
export const EMULATED = 'emulated';
/** The row key of a run on an NPU this side could not name (an older probe, no xrt-smi, no sysfs). */
export const UNKNOWN = 'unknown';

function plain(e: Entry): Generation {
  return { id: e.id, name: e.name, family: e.family };
}

/** Hawk Point and Phoenix share a PCI id and a driver name: the CPU model tells them apart. */
function refine(base: Entry, cpuModel: string | null | undefined): Generation {
  if (cpuModel) {
    for (const e of TABLE) if (e.refines === base.id && e.cpu && new RegExp(e.cpu).test(cpuModel)) return plain(e);
  }
  return plain(base);
}

const hex = (s: string | null | undefined, width: number) => (s ?? '').trim().toLowerCase().replace(/^0x/, '').padStart(width, '0');

/** From the PCI device id and revision (sysfs `device`, `revision`), as the driver maps them. */
export function generationOfPci(device: string, revision: string | null, cpuModel?: string | null): Generation | null {
  const key = `${hex(device, 4)}:${hex(revision, 2)}`;
  const e = TABLE.find((x) => x.pci.includes(key));
  return e ? refine(e, cpuModel) : null;
}

/** From the name the driver gives the device (sysfs vbnv, the xrt-smi device table). */
export function generationOfName(name: string | null | undefined, cpuModel?: string | null): Generation | null {
  const n = (name ?? '').trim().toLowerCase();
  if (!n) return null;
  // Longest name first: "NPU Strix Halo" before "NPU Strix".
  const all = TABLE.flatMap((e) => e.names.map((x) => ({ e, x: x.toLowerCase() }))).sort((a, b) => b.x.length - a.x.length);
  const hit = all.find(({ x }) => n === x || n.includes(x));
  return hit ? refine(hit.e, cpuModel) : null;
}

/** A generation by its id; null for an id the table does not know. */
function generationById(id: string | null | undefined): Generation | null {
  const e = TABLE.find((x) => x.id === id);
  return e ? plain(e) : null;
}

/** A generation id for people: its name when the table knows it, else the id itself. */
export function generationName(id: string | null | undefined): string {
  if (!id) return UNKNOWN;
  if (id === EMULATED) return 'emulated (no NPU)';
  return generationById(id)?.name ?? id;
}

/** What the probe records about the NPU a run used (probe.json environment.npu). */
export interface NpuFacts {
  /** A generation id of the table, or null when the device could not be named. */
  generation: string | null;
  /** The driver's name for the device (sysfs vbnv, or xrt-smi's device table). */
  name: string | null;
  /** "1022:17f0 rev 10". */
  pci: string | null;
  bdf: string | null;
  /** amdxdna driver version, NPU firmware version, XRT version, as xrt-smi or sysfs report them. */
  driver: string | null;
  firmware: string | null;
  xrt: string | null;
  /** Where the generation came from: "pci", "name" (vbnv or xrt-smi), or "none". */
  source: 'pci' | 'name' | 'none';
}

/** The history key of a record's NPU: its generation id, "emulated" when no NPU ran, else "unknown". */
export function recordNpu(r: { emulate?: unknown; environment?: { npu?: { generation: string | null } | null } | null }): string {
  if (r.emulate) return EMULATED;
  const g = r.environment?.npu?.generation;
  return typeof g === 'string' && GENERATION_ID_RE.test(g) ? g : UNKNOWN;
}
