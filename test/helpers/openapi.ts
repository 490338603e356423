// GitHub's published OpenAPI description (npm @octokit/openapi) and a compact validator for the
// JSON-schema subset it uses on the routes we call: $ref, type, nullable, enum, properties,
// required, additionalProperties, items, oneOf/anyOf/allOf, bounds, pattern.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
let spec: any = null;

export function loadSpec(): any {
  if (!spec) spec = JSON.parse(readFileSync(require.resolve('@octokit/openapi/generated/api.github.com.json'), 'utf8'));
  return spec;
}

export function deref(node: any): any {
  let n = node;
  const seen = new Set<string>();
  while (n && typeof n === 'object' && typeof n.$ref === 'string') {
    if (seen.has(n.$ref)) throw new Error(`$ref cycle at ${n.$ref}`);
    seen.add(n.$ref);
    const parts = n.$ref.replace(/^#\//, '').split('/').map((p: string) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
    n = parts.reduce((o: any, k: string) => o?.[k], loadSpec());
    if (n === undefined) throw new Error(`unresolved $ref ${[...seen].pop()}`);
  }
  return n;
}

export interface Operation {
  template: string;
  method: string;
  operationId: string;
  op: any;
  params: Record<string, string>;
}

interface CompiledRoute {
  template: string;
  regex: RegExp;
  names: string[];
  literals: number;
}
let routes: CompiledRoute[] | null = null;

function compiled(): CompiledRoute[] {
  if (routes) return routes;
  routes = Object.keys(loadSpec().paths).map((template) => {
    const names: string[] = [];
    const src = template
      .split('/')
      .map((seg) => {
        const m = /^\{(.+)\}$/.exec(seg);
        if (m) {
          names.push(m[1]);
          return '([^/]+)';
        }
        return seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      })
      .join('/');
    return { template, regex: new RegExp(`^${src}$`), names, literals: template.split('/').filter((s) => s && !s.startsWith('{')).length };
  });
  routes.sort((a, b) => b.literals - a.literals);
  return routes;
}

/** The spec's operation for a method and path, or null when GitHub has no such route. */
export function findOperation(method: string, path: string): Operation | null {
  const m = method.toLowerCase();
  for (const r of compiled()) {
    const hit = r.regex.exec(path);
    if (!hit) continue;
    const item = loadSpec().paths[r.template];
    const op = item[m];
    if (!op) continue;
    const params: Record<string, string> = {};
    r.names.forEach((n, i) => (params[n] = decodeURIComponent(hit[i + 1])));
    return { template: r.template, method: m, operationId: op.operationId, op, params };
  }
  return null;
}

export interface ValidateOptions {
  /** Reject object properties the schema does not declare (stricter than the spec; catches typos). */
  noUnknown?: boolean;
}

/** Problems with `value` against `schema`, as "path: what" strings; empty when valid. */
export function validate(schema: any, value: unknown, path = '$', opts: ValidateOptions = {}): string[] {
  const s = deref(schema);
  if (!s || typeof s !== 'object' || Object.keys(s).length === 0) return [];
  if (value === null) return s.nullable || s.type === 'null' || (s.enum ?? []).includes(null) || hasNullBranch(s) ? [] : [`${path}: null is not allowed`];
  const out: string[] = [];
  if (s.allOf) for (const sub of s.allOf) out.push(...validate(sub, value, path, { ...opts, noUnknown: false }));
  if (s.anyOf && !s.anyOf.some((sub: any) => validate(sub, value, path, opts).length === 0)) out.push(`${path}: matches none of anyOf`);
  if (s.oneOf) {
    const n = s.oneOf.filter((sub: any) => validate(sub, value, path, opts).length === 0).length;
    if (n !== 1) out.push(`${path}: matches ${n} of oneOf, expected exactly 1`);
  }
  if (s.enum && !s.enum.includes(value)) out.push(`${path}: ${JSON.stringify(value)} is not one of ${JSON.stringify(s.enum)}`);
  const t = s.type;
  if (t) {
    const ok =
      t === 'string' ? typeof value === 'string'
      : t === 'integer' ? Number.isInteger(value)
      : t === 'number' ? typeof value === 'number' && Number.isFinite(value)
      : t === 'boolean' ? typeof value === 'boolean'
      : t === 'array' ? Array.isArray(value)
      : t === 'object' ? typeof value === 'object' && !Array.isArray(value)
      : true;
    if (!ok) return [...out, `${path}: expected ${t}, got ${Array.isArray(value) ? 'array' : typeof value}`];
  }
  if (typeof value === 'string') {
    if (s.minLength !== undefined && value.length < s.minLength) out.push(`${path}: shorter than ${s.minLength}`);
    if (s.maxLength !== undefined && value.length > s.maxLength) out.push(`${path}: longer than ${s.maxLength}`);
    if (s.pattern && !new RegExp(s.pattern, 'u').test(value)) out.push(`${path}: does not match ${s.pattern}`);
  }
  if (typeof value === 'number') {
    if (s.minimum !== undefined && value < s.minimum) out.push(`${path}: below ${s.minimum}`);
    if (s.maximum !== undefined && value > s.maximum) out.push(`${path}: above ${s.maximum}`);
  }
  if (Array.isArray(value)) {
    if (s.minItems !== undefined && value.length < s.minItems) out.push(`${path}: fewer than ${s.minItems} items`);
    if (s.maxItems !== undefined && value.length > s.maxItems) out.push(`${path}: more than ${s.maxItems} items`);
    if (s.items) value.forEach((v, i) => out.push(...validate(s.items, v, `${path}[${i}]`, opts)));
  }
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const obj = value as Record<string, unknown>;
    for (const r of s.required ?? []) if (!(r in obj)) out.push(`${path}: missing required property ${r}`);
    const props = s.properties ?? {};
    for (const [k, v] of Object.entries(obj)) {
      if (k in props) out.push(...validate(props[k], v, `${path}.${k}`, opts));
      else if (s.additionalProperties === false) out.push(`${path}: property ${k} is not allowed`);
      else if (s.additionalProperties && typeof s.additionalProperties === 'object') out.push(...validate(s.additionalProperties, v, `${path}.${k}`, opts));
      else if (opts.noUnknown && s.properties && !s.allOf && !s.oneOf && !s.anyOf) out.push(`${path}: property ${k} is not in the schema`);
    }
  }
  return out;
}

function hasNullBranch(s: any): boolean {
  return [...(s.oneOf ?? []), ...(s.anyOf ?? [])].some((b: any) => {
    const d = deref(b);
    return d?.nullable || d?.type === 'null';
  });
}

/** Coerces a query or path string to the parameter's schema type, or returns an error. */
function coerce(schema: any, raw: string): { value?: unknown; error?: string } {
  const s = deref(schema) ?? {};
  switch (s.type) {
    case 'integer':
      return /^-?\d+$/.test(raw) ? { value: Number(raw) } : { error: `${JSON.stringify(raw)} is not an integer` };
    case 'number':
      return raw.trim() !== '' && Number.isFinite(Number(raw)) ? { value: Number(raw) } : { error: `${JSON.stringify(raw)} is not a number` };
    case 'boolean':
      return raw === 'true' || raw === 'false' ? { value: raw === 'true' } : { error: `${JSON.stringify(raw)} is not a boolean` };
    case 'array':
      return { value: raw.split(',') };
    default:
      return { value: raw };
  }
}

export interface RequestProblems {
  operation: Operation | null;
  problems: string[];
  query: Record<string, unknown>;
}

/** Checks method, path, query and JSON body of one request against the spec. */
export function validateRequest(
  method: string,
  path: string,
  query: URLSearchParams,
  contentType: string | undefined,
  rawBody: string,
  opts: ValidateOptions = { noUnknown: true },
): RequestProblems {
  const operation = findOperation(method, path);
  if (!operation) return { operation: null, problems: [`${method} ${path}: no such route in GitHub's OpenAPI description`], query: {} };
  const problems: string[] = [];
  const where = `${method} ${operation.template}`;
  const item = loadSpec().paths[operation.template];
  const params = [...(item.parameters ?? []), ...(operation.op.parameters ?? [])].map(deref);
  for (const p of params.filter((p) => p.in === 'path')) {
    const raw = operation.params[p.name];
    const c = coerce(p.schema, raw);
    if (c.error) problems.push(`${where}: path parameter ${p.name}: ${c.error}`);
    else problems.push(...validate(p.schema, c.value, `path.${p.name}`).map((e) => `${where}: ${e}`));
  }
  const declared = new Map(params.filter((p) => p.in === 'query').map((p) => [p.name, p]));
  const q: Record<string, unknown> = {};
  for (const [k, raw] of query) {
    const p = declared.get(k);
    if (!p) {
      problems.push(`${where}: query parameter ${k} is not declared`);
      continue;
    }
    const c = coerce(p.schema, raw);
    if (c.error) problems.push(`${where}: query parameter ${k}: ${c.error}`);
    else {
      problems.push(...validate(p.schema, c.value, `query.${k}`).map((e) => `${where}: ${e}`));
      q[k] = c.value;
    }
  }
  for (const p of declared.values()) if (p.required && !query.has(p.name)) problems.push(`${where}: missing required query parameter ${p.name}`);

  const rb = operation.op.requestBody ? deref(operation.op.requestBody) : null;
  if (rawBody.length > 0) {
    if (!rb) problems.push(`${where}: takes no request body`);
    else if (!/application\/json/.test(contentType ?? '')) problems.push(`${where}: body content-type ${contentType} is not application/json`);
    else {
      let body: unknown;
      try {
        body = JSON.parse(rawBody);
      } catch {
        problems.push(`${where}: body is not JSON`);
      }
      const schema = rb.content?.['application/json']?.schema;
      if (body !== undefined && schema) problems.push(...validate(schema, body, 'body', opts).map((e) => `${where}: ${e}`));
    }
  } else if (rb?.required) problems.push(`${where}: request body is required`);
  return { operation, problems, query: q };
}

/** Checks a response we send back against the operation's documented response for that status. */
export function validateResponse(op: Operation, status: number, body: unknown): string[] {
  const responses = op.op.responses ?? {};
  const r = deref(responses[String(status)] ?? responses.default);
  if (!r) return [`${op.method.toUpperCase()} ${op.template}: status ${status} is not documented`];
  const schema = r.content?.['application/json']?.schema;
  if (!schema) return [];
  return validate(schema, body, 'response').map((e) => `${op.method.toUpperCase()} ${op.template} -> ${status}: ${e}`);
}
