// What report.html and the fleet page share: the page shell (one self-contained file: its one style
// sheet and its one script inline, each allowed by its hash in a Content-Security-Policy that
// forbids everything else: no network, no other script, font or image), the colour-blind-safe
// palette, and the hand-written SVG pieces (axes, lines, sparklines). Charts are hand-written SVG,
// not a library's: the pictures are a few rects and polylines, a bundled charting library would be
// most of the file's size, and a string we build is a string we can escape.
import { createHash } from 'node:crypto';
import { html } from '../text/escape.ts';

/** The palette (ColorBrewer's blue-orange, lightness falling with the cosine: it reads in grey and
 * to every common colour vision deficiency). One class per heatmap class (heatmap.ts). */
export const PALETTE = {
  clean: '#d1e5f0',
  drift: '#fdb863',
  under: '#e66101',
  well: '#5e1d01',
  nan: '#542788',
  none: '#f0f0f0',
  pass: '#2166ac',
  fail: '#b35806',
  error: '#4d4d4d',
  line: '#08306b',
  threshold: '#b35806',
  shade: '#fee0b6',
} as const;

const CSS = `
:root{color-scheme:light;--fg:#1a1a1a;--muted:#555;--rule:#ccc;--bg:#fff}
*{box-sizing:border-box}
body{margin:0 auto;padding:16px;max-width:1240px;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--fg);background:var(--bg)}
h1{font-size:1.35rem;margin:.2rem 0 .6rem}h2{font-size:1.1rem;margin:1.6rem 0 .5rem;border-bottom:1px solid var(--rule);padding-bottom:.2rem}
h3{font-size:1rem;margin:1rem 0 .4rem}
p{margin:.4rem 0}
code,.mono{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:.92em;overflow-wrap:anywhere}
td code{overflow-wrap:normal;white-space:nowrap}
.banner{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:center;padding:.7rem 1rem;border-radius:6px;color:#fff;margin:.2rem 0 1rem}
.banner .verdict{font-size:1.5rem;font-weight:700;letter-spacing:.03em}
.banner.pass{background:${PALETTE.pass}}.banner.fail{background:${PALETTE.fail}}.banner.error{background:${PALETTE.error}}
.tag{display:inline-block;border:2px solid currentColor;border-radius:4px;padding:0 .4rem;font-weight:700}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:.1rem 1rem;margin:.3rem 0}
.facts dt{color:var(--muted)}.facts dd{margin:0;overflow-wrap:anywhere}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:.4rem 0;font-variant-numeric:tabular-nums}
th,td{border:1px solid var(--rule);padding:.2rem .5rem;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;white-space:nowrap}
th{background:#f4f4f4}
tr.first-below td{font-weight:700}
.ok,.bad,.err{white-space:nowrap}
.ok{color:${PALETTE.pass};font-weight:700}.bad{color:${PALETTE.fail};font-weight:700}.err{color:${PALETTE.error};font-weight:700}
.gatebar{display:block;width:140px;height:10px;margin-top:3px}
.note{color:var(--muted);font-size:.9em}
.warn{border-left:4px solid ${PALETTE.fail};padding:.3rem .7rem;background:#fff7ec;margin:.5rem 0}
svg{display:block;width:100%;height:auto;max-width:1200px}
svg.chart{min-width:620px}svg.heat{min-width:760px}svg.spark{width:160px;min-width:160px;display:inline-block;vertical-align:middle}
svg text{font:11px system-ui,"DejaVu Sans",sans-serif;fill:#1a1a1a}
svg .axis{stroke:#888;stroke-width:1}svg .grid{stroke:#e5e5e5;stroke-width:1}
.k-clean{fill:${PALETTE.clean}}.k-drift{fill:${PALETTE.drift}}.k-under{fill:${PALETTE.under}}.k-well{fill:${PALETTE.well}}.k-nan{fill:${PALETTE.nan}}.k-none{fill:${PALETTE.none}}
.legend{display:flex;flex-wrap:wrap;gap:.3rem 1.1rem;margin:.4rem 0;font-size:.9em}
.legend span{display:inline-flex;align-items:center;gap:.35rem}
.legend svg{width:18px;height:14px;min-width:18px;display:inline-block}
.readout{min-height:1.5em;font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.9em;background:#f7f7f7;padding:.2rem .5rem;border-radius:4px}
[data-cell]:focus{outline:none}
svg[data-heatmap]:focus{outline:2px solid ${PALETTE.line};outline-offset:2px}
.cursor{fill:none;stroke:#000;stroke-width:2}
details{margin:.4rem 0}summary{cursor:pointer;color:var(--muted)}
.cell-pass{background:#e8f1f8}.cell-fail{background:#fdebd6}.cell-error{background:#eee}
rect.cell-pass{fill:#e8f1f8}rect.cell-fail{fill:#fdebd6}rect.cell-error{fill:#eee}
.fleet td{min-width:9rem}
@media (max-width:640px){body{padding:8px;font-size:14px}.banner .verdict{font-size:1.2rem}h1{font-size:1.15rem}}
@media print{body{max-width:none;padding:0;font-size:11pt}.scroll{overflow:visible}svg.chart,svg.heat{min-width:0}
.readout,.noprint{display:none}h2{break-after:avoid}table,svg,figure{break-inside:avoid}
*{-webkit-print-color-adjust:exact;print-color-adjust:exact}a{color:inherit;text-decoration:none}}
`;

/** Hover and focus on a heatmap cell show its numbers in the readout under the chart; the arrow keys
 * move through the cells of a focused heatmap. Without it every value is in the tables. */
const SCRIPT = `(function(){
"use strict";
function readout(el){var s=el.closest("figure");return s?s.querySelector("[data-readout]"):null;}
function show(el){var t=el.querySelector("title"),r=readout(el);if(t&&r){r.textContent=t.textContent;}}
function cellOf(e){return e.target&&e.target.closest?e.target.closest("[data-cell]"):null;}
document.addEventListener("pointerover",function(e){var c=cellOf(e);if(c)show(c);});
document.addEventListener("focusin",function(e){var c=cellOf(e);if(c)show(c);});
Array.prototype.forEach.call(document.querySelectorAll("svg[data-heatmap]"),function(svg){
var rows=Array.prototype.map.call(svg.querySelectorAll("[data-row]"),function(g){return g.querySelectorAll("[data-cell]");}).filter(function(x){return x.length;});
if(!rows.length)return;
var r=0,c=0,cur=document.createElementNS("http://www.w3.org/2000/svg","rect");cur.setAttribute("class","cursor");cur.setAttribute("visibility","hidden");svg.appendChild(cur);
function put(){var row=rows[r],el=row[Math.min(c,row.length-1)];["x","y","width","height"].forEach(function(k){cur.setAttribute(k,el.getAttribute(k));});cur.setAttribute("visibility","visible");show(el);}
svg.addEventListener("focus",put);
svg.addEventListener("blur",function(){cur.setAttribute("visibility","hidden");});
svg.addEventListener("keydown",function(e){var k=e.key;
if(k==="ArrowRight")c=Math.min(c+1,rows[r].length-1);else if(k==="ArrowLeft")c=Math.max(c-1,0);
else if(k==="ArrowDown")r=Math.min(r+1,rows.length-1);else if(k==="ArrowUp")r=Math.max(r-1,0);
else if(k==="Home")c=0;else if(k==="End")c=rows[r].length-1;else return;
e.preventDefault();put();});
});
})();`;

const sha256 = (s: string) => `'sha256-${createHash('sha256').update(s, 'utf8').digest('base64')}'`;

/** The Content-Security-Policy of every page: nothing but its own inline style and script (by hash). */
const CSP = `default-src 'none'; style-src ${sha256(CSS)}; script-src ${sha256(SCRIPT)}; img-src 'none'; font-src 'none'; connect-src 'none'; media-src 'none'; object-src 'none'; frame-src 'none'; worker-src 'none'; manifest-src 'none'; base-uri 'none'; form-action 'none'`;

/** A whole page: `title` and `body` are already HTML (the caller escaped every foreign string). */
export function page(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<style>${CSS}</style>
</head>
<body>
${body}
<script>${SCRIPT}</script>
</body>
</html>
`;
}

export const esc = html;

/** A number for an SVG attribute: finite, two decimals at most. */
export function n2(x: number): string {
  return Number.isFinite(x) ? String(Math.round(x * 100) / 100) : '0';
}

/** A table: header cells and rows of cells, each already HTML; `num` marks the right-aligned columns. */
export function table(head: string[], rows: string[][], o: { num?: number[]; rowClass?: (i: number) => string; caption?: string } = {}): string {
  const num = new Set(o.num ?? []);
  const th = head.map((h, i) => `<th scope="col"${num.has(i) ? ' class="n"' : ''}>${h}</th>`).join('');
  const body = rows.map((r, ri) => {
    const cls = o.rowClass?.(ri);
    return `<tr${cls ? ` class="${cls}"` : ''}>${r.map((c, i) => `<td${num.has(i) ? ' class="n"' : ''}>${c}</td>`).join('')}</tr>`;
  }).join('\n');
  return `<div class="scroll"><table>${o.caption ? `<caption>${o.caption}</caption>` : ''}<thead><tr>${th}</tr></thead><tbody>\n${body}\n</tbody></table></div>`;
}

/** A swatch and its meaning, for a legend. */
export function swatch(klass: string, label: string, attrs = ''): string {
  return `<span${attrs}><svg viewBox="0 0 18 14" aria-hidden="true"><rect width="18" height="14" class="${klass}" stroke="#777" stroke-width="1"/></svg>${label}</span>`;
}

/**
 * A sparkline of values (oldest first; NaN and null are gaps), with its lowest and highest point
 * named in its title. '' when fewer than one finite value.
 */
export function sparkline(values: (number | null)[], label: string, o: { fmt: (x: number) => string; bar?: number | null } = { fmt: String }): string {
  const pts = values.map((v, i) => ({ v: typeof v === 'number' && Number.isFinite(v) ? v : null, i }));
  const finite = pts.filter((p) => p.v !== null).map((p) => p.v!);
  if (!finite.length) return '';
  const W = 160;
  const H = 32;
  let lo = Math.min(...finite, o.bar ?? Infinity);
  let hi = Math.max(...finite, o.bar ?? -Infinity);
  if (hi - lo < 1e-12) { lo -= 1e-6; hi += 1e-6; }
  const x = (i: number) => (values.length === 1 ? W / 2 : 4 + (i * (W - 8)) / (values.length - 1));
  const y = (v: number) => 4 + ((hi - v) * (H - 8)) / (hi - lo);
  const segs: string[] = [];
  let cur: string[] = [];
  for (const p of pts) {
    if (p.v === null) { if (cur.length) segs.push(cur.join(' ')); cur = []; continue; }
    cur.push(`${n2(x(p.i))},${n2(y(p.v))}`);
  }
  if (cur.length) segs.push(cur.join(' '));
  const lines = segs.map((s) => `<polyline points="${s}" fill="none" stroke="${PALETTE.line}" stroke-width="1.5"/>`).join('');
  const dots = pts.filter((p) => p.v !== null).map((p) => `<circle cx="${n2(x(p.i))}" cy="${n2(y(p.v!))}" r="2" fill="${PALETTE.line}"/>`).join('');
  const bar = typeof o.bar === 'number' && Number.isFinite(o.bar) ? `<line x1="0" x2="${W}" y1="${n2(y(o.bar))}" y2="${n2(y(o.bar))}" stroke="${PALETTE.threshold}" stroke-dasharray="3 2"/>` : '';
  const title = `${label}: ${values.length} run${values.length === 1 ? '' : 's'}, ${o.fmt(Math.min(...finite))} to ${o.fmt(Math.max(...finite))}, last ${o.fmt(finite[finite.length - 1])}`;
  return `<svg class="spark" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(title)}"><title>${esc(title)}</title>${bar}${lines}${dots}</svg>`;
}
