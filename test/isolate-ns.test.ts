// Issue 25 (lower finding): when bubblewrap's sandbox does not start, the refusal names the
// namespace the kernel refused. It used to say "cannot create a user namespace" whatever failed,
// sending the admin to the AppArmor userns rule when the network namespace (say) was refused. On a
// fake host whose bubblewrap cannot create one given namespace; and on this machine, where each starts.
import { test } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { chooseIsolation, realHost, APPARMOR_FIX, type IsolationHost } from '../src/probe/isolate.ts';
import { failedNamespace } from '../src/probe/namespaces.ts';
import { InfraError } from '../src/errors.ts';
import { missingBwrap } from './helpers/bwrap.ts';

const BWRAP = '/usr/bin/bwrap';
const TRUE = '/usr/bin/true';
const FLAG = { user: '--unshare-user', mount: null, pid: '--unshare-pid', network: '--unshare-net', ipc: '--unshare-ipc', uts: '--unshare-uts' } as const;

/**
 * A host with bubblewrap (not setuid) and nothing else, whose kernel refuses the namespace `refused`
 * (mount: any bubblewrap at all). Another uid than root gets no namespace without a user namespace.
 */
function host(uid: number, refused: keyof typeof FLAG, tools: string[] = ['bwrap', 'true', 'setpriv']): IsolationHost {
  const flag = FLAG[refused];
  return {
    which: (c) => (tools.includes(c) ? (c === 'bwrap' ? BWRAP : c === 'true' ? TRUE : `/usr/bin/${c}`) : null),
    works: (a) => a[0] === BWRAP && (flag === null ? false : !a.includes(flag)) && (uid === 0 || a.includes('--unshare-user')),
    uid: () => uid, uidOf: () => null, gidOf: () => null, env: { HOME: '/home/runner' }, readFile: () => null,
    view: { exists: () => true, isDir: () => true, realpath: (p) => p, list: () => null, readText: () => null },
    home: '/home/runner', self: '/usr/bin/node', lockFiles: () => [], processesOf: () => [], sleep: () => {},
  };
}

/** The refusal an untrusted run gets on that host. */
function refusal(uid: number, refused: keyof typeof FLAG, tools?: string[]): string {
  try {
    chooseIsolation({ mode: 'auto', untrusted: true, allowUnisolated: false }, host(uid, refused, tools), { writable: ['/srv/run'], env: { HOME: '/home/runner' }, network: false, cwd: '/srv/run' });
  } catch (e) {
    assert.ok(e instanceof InfraError, String(e));
    assert.not.ok((e as Error).message.includes('\n'));
    return (e as Error).message;
  }
  throw new Error('not refused');
}

test('as root: the refused namespace is the one named (network, PID, IPC, UTS, mount); the user namespace only when it is the one', () => {
  for (const [ns, words] of [['network', 'a network namespace'], ['pid', 'a PID namespace'], ['ipc', 'an IPC namespace'], ['uts', 'a UTS namespace'], ['mount', 'a mount namespace']] as const) {
    const m = refusal(0, ns);
    assert.ok(m.includes(`bubblewrap: cannot create ${words} here`), m);
    assert.not.match(m, /user namespace/, ns);
    assert.not.ok(m.includes(APPARMOR_FIX), ns);
  }
  // As root the sandbox needs no user namespace (setpriv drops to nobody): a refused one refuses nothing.
  assert.is(chooseIsolation({ mode: 'auto', untrusted: true, allowUnisolated: false }, host(0, 'user'), { writable: ['/srv/run'], env: { HOME: '/home/runner' }, network: false, cwd: '/srv/run' }).mode, 'namespace');
  // Without setpriv, root gets no sandbox: it would run the probe as uid 0.
  assert.match(refusal(0, 'network', ['bwrap', 'true']), /setpriv \(util-linux\) is missing: as root the sandbox must drop to uid 65534/);
});

test('as another uid: the same; the AppArmor fix only for the user namespace', () => {
  assert.ok(refusal(1001, 'network').includes('bubblewrap: cannot create a network namespace here'), refusal(1001, 'network'));
  assert.not.ok(refusal(1001, 'network').includes(APPARMOR_FIX));
  assert.ok(refusal(1001, 'user').includes(`bubblewrap: cannot create a user namespace here (${APPARMOR_FIX})`));
});

test('the probe adds the sandbox\'s namespaces one at a time; with the network shared, no network namespace is asked for', () => {
  const ran: string[][] = [];
  const works = (a: string[]) => { ran.push(a); return !a.includes('--unshare-ipc'); };
  // As root: no user namespace (the root sandbox has none).
  assert.is(failedNamespace(works, BWRAP, TRUE, { root: true, network: true, uid: null }), 'an IPC namespace');
  assert.equal(ran.map((a) => a.slice(4, -1)), [[], ['--unshare-pid'], ['--unshare-pid', '--unshare-ipc']]);
  ran.length = 0;
  assert.is(failedNamespace(works, BWRAP, TRUE, { root: false, network: true, uid: null }), 'an IPC namespace');
  assert.equal(ran.map((a) => a.slice(4, -1)), [['--unshare-user'], ['--unshare-user', '--unshare-pid'], ['--unshare-user', '--unshare-pid', '--unshare-ipc']]);
});

test.unless(missingBwrap)('on this machine each namespace starts: nothing is named', () => {
  const root = realHost.uid() === 0;
  assert.is(failedNamespace((a) => realHost.works(a), realHost.which('bwrap')!, realHost.which('true') ?? '/bin/true', { root, network: false, uid: null }), null);
});

test.run();
