// Headless Chromium for the page tests (issue 31.4): Debian's chromium (apt; .ci/run installs it)
// driven by playwright-core, which never downloads a browser of its own. Each page is opened from
// disk in a fresh browser context (a profile of its own); every console message of type error, every page error and every request
// that is not the file itself is recorded. Screenshots go to $NPU_BLOCK_GATE_SCREENSHOTS (.ci/run
// prints where), kept as CI artifacts, never compared as goldens.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { pathToFileURL } from 'node:url';
import { inflateSync } from 'node:zlib';
import type { Missing } from './skip.ts';

export const CHROMIUM = process.env.NPU_BLOCK_GATE_CHROMIUM || '/usr/bin/chromium';

export function missingChromium(): Missing | null {
  if (!existsSync(CHROMIUM)) return { need: 'chromium', why: `no Chromium at ${CHROMIUM} (apt-get install chromium, or set NPU_BLOCK_GATE_CHROMIUM)` };
  return null;
}

/** Where screenshots are kept (made on first use). */
export function shotsDir(): string {
  const d = process.env.NPU_BLOCK_GATE_SCREENSHOTS || join(tmpdir(), 'npu-block-gate-screenshots');
  mkdirSync(d, { recursive: true });
  return d;
}

type Page = import('playwright-core').Page;
type Context = import('playwright-core').BrowserContext;

export interface Opened {
  page: Page;
  /** Console errors and uncaught page errors, as text. */
  errors: string[];
  /** Every request the page made other than its own file (a self-contained page makes none). */
  requests: string[];
  /** Every console message (any type), for a failing assertion's message. */
  console: string[];
  close(): Promise<void>;
}

type Browser = import('playwright-core').Browser;
let browser: Promise<Browser> | null = null;

/**
 * Opens `file` in a fresh browser context (a profile of its own: no cookies, storage or cache from
 * another page) at the viewport given (default 1280x800). One headless Chromium per test file, started
 * on the first page: a file that opens pages calls closeBrowser() in its test.after.
 */
export async function openPage(file: string, o: { width?: number; height?: number; javaScript?: boolean } = {}): Promise<Opened> {
  browser ??= import('playwright-core').then(({ chromium }) => chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  }));
  const ctx: Context = await (await browser).newContext({
    viewport: { width: o.width ?? 1280, height: o.height ?? 800 },
    javaScriptEnabled: o.javaScript ?? true,
  });
  const page = await ctx.newPage();
  const url = pathToFileURL(file).href;
  const errors: string[] = [];
  const requests: string[] = [];
  const log: string[] = [];
  page.on('console', (m) => {
    log.push(`${m.type()}: ${m.text()}`);
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('request', (r) => { if (r.url() !== url) requests.push(r.url()); });
  await page.goto(url, { waitUntil: 'load' });
  return {
    page, errors, requests, console: log,
    close: () => ctx.close(),
  };
}

/** Ends the test file's Chromium (none started: nothing to do). */
export async function closeBrowser(): Promise<void> {
  const b = browser;
  browser = null;
  if (b) await (await b).close();
}

/** A decoded PNG: RGBA bytes, row by row. */
export interface Image { width: number; height: number; rgba: Uint8Array }

/** Decodes the PNG Chromium writes (8-bit RGB or RGBA, not interlaced). */
export function decodePng(buf: Buffer): Image {
  if (buf.readUInt32BE(0) !== 0x89504e47) throw new Error('not a PNG');
  let off = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Buffer[] = [];
  while (off < buf.length) {
    const len = buf.readUInt32BE(off);
    const type = buf.toString('latin1', off + 4, off + 8);
    const data = buf.subarray(off + 8, off + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const depth = data[8];
      const colour = data[9];
      if (depth !== 8 || (colour !== 2 && colour !== 6) || data[12] !== 0) throw new Error(`PNG kind not handled: depth ${depth}, colour ${colour}, interlace ${data[12]}`);
      channels = colour === 6 ? 4 : 3;
    } else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') break;
    off += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const out = new Uint8Array(width * height * 4);
  const prev = new Uint8Array(stride);
  const cur = new Uint8Array(stride);
  for (let y = 0; y < height; y++) {
    const f = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? cur[i - channels] : 0;
      const b = prev[i];
      const c = i >= channels ? prev[i - channels] : 0;
      let v = line[i];
      if (f === 1) v += a;
      else if (f === 2) v += b;
      else if (f === 3) v += (a + b) >> 1;
      else if (f === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      cur[i] = v & 0xff;
    }
    for (let x = 0; x < width; x++) {
      for (let k = 0; k < 3; k++) out[(y * width + x) * 4 + k] = cur[x * channels + k];
      out[(y * width + x) * 4 + 3] = channels === 4 ? cur[x * channels + 3] : 255;
    }
    prev.set(cur);
  }
  return { width, height, rgba: out };
}

/** The colour at (x, y) as [r, g, b]. */
export function pixel(img: Image, x: number, y: number): [number, number, number] {
  const i = (Math.round(y) * img.width + Math.round(x)) * 4;
  return [img.rgba[i], img.rgba[i + 1], img.rgba[i + 2]];
}

export const sameColour = (a: readonly number[], b: readonly number[], tol = 6) => a.every((v, i) => Math.abs(v - b[i]) <= tol);
