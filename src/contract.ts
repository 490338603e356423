// The constants the Python probe and this side share, read from the one file both load:
// scripts/probe/contract.json (exit codes, schema names and versions, run-dir file names,
// the bisect contract, the NPU lock, the probe's event protocol). test/contract.test.ts and
// test/python/test_contract.py check both sides against it.
import contract from '../scripts/probe/contract.json' with { type: 'json' };

export const CONTRACT = contract;
export const EXIT_CODES = contract.exit;
export const PROBE = contract.probe;
export const RUN_FILES_CONTRACT = contract.run_files;
export const BISECT_CONTRACT = contract.bisect;
export const NPU_LOCK = contract.npu_lock;
export const EVENT_PREFIX = contract.control.event_prefix;
export const PLAN_CONTRACT = contract.plan;
