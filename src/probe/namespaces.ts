// Which namespace bubblewrap cannot create here (issue 25, lower finding): the sandbox asks the
// kernel for all of them in one clone, and its failure does not say which one was refused. A
// refusal that named the user namespace whenever the sandbox did not start sent the admin after the
// wrong fix (the AppArmor userns rule) when the network namespace, say, was the one refused. So a
// bare bubblewrap is tried with the sandbox's namespaces added one at a time, and the first that
// fails is named.

/** The sandbox's namespaces (src/probe/sandbox.ts), in the order they are tried, as a refusal names them. */
function namespaceSteps(o: { root: boolean; network: boolean; uid: number | null }): [string, string[]][] {
  const user: [string, string[]] = ['a user namespace', ['--unshare-user', ...(o.uid !== null ? ['--uid', String(o.uid), '--gid', String(o.uid)] : [])]];
  return [
    // As root bubblewrap makes a mount namespace without a user namespace (and the root sandbox has
    // none: setpriv drops to nobody instead); any other uid needs the user namespace first.
    ...(o.root ? [['a mount namespace', []] as [string, string[]]] : [user]),
    ['a PID namespace', ['--unshare-pid']],
    ...(o.network ? [] : [['a network namespace', ['--unshare-net']] as [string, string[]]]),
    ['an IPC namespace', ['--unshare-ipc']],
    ['a UTS namespace', ['--unshare-uts']],
  ];
}

/**
 * The first namespace a bare bubblewrap (`bwrap --ro-bind / / <flags> true`) cannot create here,
 * adding the sandbox's namespaces one at a time; null when each of them starts (then something
 * else of the sandbox failed: a bind).
 */
export function failedNamespace(works: (argv: string[]) => boolean, bwrap: string, noop: string, o: { root: boolean; network: boolean; uid: number | null }): string | null {
  const flags: string[] = [];
  for (const [name, add] of namespaceSteps(o)) {
    flags.push(...add);
    if (!works([bwrap, '--ro-bind', '/', '/', ...flags, noop])) return name;
  }
  return null;
}
