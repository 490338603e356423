// Documents as people keep them: bytes in, the same bytes out wherever we change nothing.
//  - Bytes that are not UTF-8 (a Latin-1 "é", a stray 0xff) survive: each invalid byte decodes to
//    a lone surrogate U+DC80..U+DCFF and encodes back to that byte (Python's "surrogateescape"),
//    so the text functions work on ordinary strings and never see a U+FFFD.
//  - Line endings are kept per line: a file is a list of lines, each with its own ending ("\n",
//    "\r\n" or none for a last line without one); a line we add takes its neighbour's ending.
import { isUtf8 } from 'node:buffer';

/** Decodes bytes as UTF-8, escaping every byte that is not part of a valid sequence. */
export function decodeDoc(buf: Uint8Array): string {
  // Valid (strict) UTF-8, as nearly every document is: nothing to escape, and Node's decoder is
  // exact on it (isUtf8 refuses overlong forms, surrogates and anything past U+10FFFF, as below).
  if (isUtf8(buf)) return Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength).toString('utf8');
  let out = '';
  let chunk: number[] = [];
  const flush = () => {
    if (chunk.length) out += String.fromCharCode(...chunk);
    chunk = [];
  };
  const push = (u: number) => {
    chunk.push(u);
    if (chunk.length >= 4096) flush();
  };
  const n = buf.length;
  let i = 0;
  while (i < n) {
    const b = buf[i];
    if (b < 0x80) { push(b); i++; continue; }
    let need = 0;
    let cp = 0;
    let min = 0;
    if (b >= 0xc2 && b <= 0xdf) { need = 1; cp = b & 0x1f; min = 0x80; }
    else if (b >= 0xe0 && b <= 0xef) { need = 2; cp = b & 0x0f; min = 0x800; }
    else if (b >= 0xf0 && b <= 0xf4) { need = 3; cp = b & 0x07; min = 0x10000; }
    let ok = need > 0 && i + need < n;
    if (ok) {
      for (let k = 1; k <= need; k++) {
        const c = buf[i + k];
        if ((c & 0xc0) !== 0x80) { ok = false; break; }
        cp = (cp << 6) | (c & 0x3f);
      }
    }
    // Strict UTF-8: no overlong forms, no surrogates, nothing past U+10FFFF.
    if (ok && (cp < min || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)) ok = false;
    if (!ok) { push(0xdc00 + b); i++; continue; }
    if (cp >= 0x10000) {
      const v = cp - 0x10000;
      push(0xd800 + (v >> 10));
      push(0xdc00 + (v & 0x3ff));
    } else push(cp);
    i += need + 1;
  }
  flush();
  return out;
}

/** The inverse of decodeDoc: UTF-8, with each escaped byte written back as itself. */
export function encodeDoc(text: string): Buffer {
  // No lone surrogate, so no escaped byte: plain UTF-8.
  if ((text as string & { isWellFormed(): boolean }).isWellFormed()) return Buffer.from(text, 'utf8');
  const out = Buffer.allocUnsafe(text.length * 3);
  let o = 0;
  for (let i = 0; i < text.length; i++) {
    const u = text.charCodeAt(i);
    if (u < 0x80) { out[o++] = u; continue; }
    if (u >= 0xd800 && u <= 0xdbff && i + 1 < text.length) {
      const lo = text.charCodeAt(i + 1);
      if (lo >= 0xdc00 && lo <= 0xdfff) {
        const cp = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
        out[o++] = 0xf0 | (cp >> 18);
        out[o++] = 0x80 | ((cp >> 12) & 0x3f);
        out[o++] = 0x80 | ((cp >> 6) & 0x3f);
        out[o++] = 0x80 | (cp & 0x3f);
        i++;
        continue;
      }
    }
    if (u >= 0xdc80 && u <= 0xdcff) { out[o++] = u - 0xdc00; continue; } // an escaped byte
    if (u >= 0xd800 && u <= 0xdfff) { out[o++] = 0xef; out[o++] = 0xbf; out[o++] = 0xbd; continue; } // a lone surrogate we made: U+FFFD
    if (u < 0x800) { out[o++] = 0xc0 | (u >> 6); out[o++] = 0x80 | (u & 0x3f); continue; }
    out[o++] = 0xe0 | (u >> 12);
    out[o++] = 0x80 | ((u >> 6) & 0x3f);
    out[o++] = 0x80 | (u & 0x3f);
  }
  return Buffer.from(out.subarray(0, o));
}

export interface Line {
  text: string;
  /** '\n', '\r\n', or '' (the last line of a file that does not end in a newline). */
  eol: string;
}

/** Splits text into lines, each keeping its own ending. '' is no lines. */
export function splitLines(text: string): Line[] {
  // String.prototype.split is V8's fastest way through a large text; a "\r" before the "\n" is the
  // line's ending, never its text.
  const parts = text.split('\n');
  const lines: Line[] = new Array(parts.length - (parts[parts.length - 1] === '' ? 1 : 0));
  for (let i = 0; i < lines.length; i++) {
    const t = parts[i];
    if (i === parts.length - 1) lines[i] = { text: t, eol: '' };
    else if (t.charCodeAt(t.length - 1) === 13) lines[i] = { text: t.slice(0, -1), eol: '\r\n' };
    else lines[i] = { text: t, eol: '\n' };
  }
  return lines;
}

export function joinLines(lines: readonly Line[]): string {
  let s = '';
  for (const l of lines) s += l.text + l.eol;
  return s;
}

/** The ending most lines use ('\n' when there is none). */
export function dominantEol(lines: readonly Line[]): string {
  let crlf = 0;
  let lf = 0;
  for (const l of lines) {
    if (l.eol === '\r\n') crlf++;
    else if (l.eol === '\n') lf++;
  }
  return crlf > lf ? '\r\n' : '\n';
}

/**
 * Inserts `texts` as new lines after index `after` (-1: at the top), each ending as the line
 * before it does. A last line without an ending first gets the file's usual one, and the last
 * inserted line then ends without one, so the file still ends the way it did.
 */
export function insertLines(lines: Line[], after: number, texts: readonly string[]): void {
  if (!texts.length) return;
  const dom = dominantEol(lines);
  const anchor = after >= 0 ? lines[after] : null;
  let eol = anchor?.eol || (after + 1 < lines.length ? lines[after + 1].eol || dom : dom);
  let lastEol = eol;
  if (anchor && anchor.eol === '') {
    anchor.eol = dom;
    eol = dom;
    lastEol = '';
  }
  lines.splice(after + 1, 0, ...texts.map((text, i) => ({ text, eol: i === texts.length - 1 ? lastEol : eol })));
}

/** Removes `count` lines at `from`; when they include a last line without an ending, the new last line ends without one too. */
export function removeLines(lines: Line[], from: number, count: number): void {
  const endsFile = from + count === lines.length;
  const lastEol = count > 0 ? lines[from + count - 1].eol : '\n';
  lines.splice(from, count);
  if (endsFile && lastEol === '' && from > 0) lines[from - 1].eol = '';
}
