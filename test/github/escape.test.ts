// Foreign strings cannot change the structure of what we render or print (escape.ts).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { text, cell, code, id, logLine, plain, isId } from '../../src/text/escape.ts';

const ZW = '\u200b';

test('text: HTML, markdown, mentions, references and links come out inert', () => {
  const t = text('<img src=x onerror=alert(1)> **bold** [click](https://evil.example/x) ![t](https://evil.example/p.png) @mallory #12 GH-3 www.evil.example <!-- hide');
  assert.not.match(t, '<');
  assert.not.match(t, '](');
  assert.not.match(t, '@mallory');
  assert.match(t, `@${ZW}mallory`);
  assert.not.match(t, /(^|[^\\])#\d/);
  assert.not.match(t, 'https://');
  assert.not.match(t, 'www.evil');
  assert.not.match(t, /(^|[^\\])\*\*/);
  assert.match(t, '&lt;\\!\\-\\- hide');
  assert.not.match(text('a\nb\r\nc'), /[\r\n]/);
  assert.is(text('x'.repeat(1000)).length, 300);
  assert.is(text('Tom & "Jerry"'), 'Tom &amp; &quot;Jerry&quot;', 'an entity is never escaped twice');
  assert.is(text("it's fine"), "it's fine");
});

test('cell: pipes escaped, lines kept as <br>, nothing else survives', () => {
  assert.is(cell('a|b\nc'), 'a\\|b<br>c');
  assert.not.match(cell('<script>|'), '<script>');
});

test('code: no backtick run, newline or pipe (in a table) breaks out', () => {
  assert.is(code('a`b'), '``a`b``');
  assert.is(code('`x`'), '`` `x` ``');
  assert.is(code('a|b', { inTable: true }), '`a\\|b`');
  assert.not.match(code('a\nb'), '\n');
  assert.is(code(''), '`""`');
});

test('id: only ^[A-Za-z0-9_.-]{1,64}$ is shown as an identifier', () => {
  assert.ok(isId('non_1024_aligned'));
  assert.not.ok(isId('a b'));
  assert.not.ok(isId('x'.repeat(65)));
  assert.not.ok(isId(7));
  assert.is(id('rms_gemms_rope'), '`rms_gemms_rope`');
  assert.match(id('<b>@x</b>'), '(not a valid id)');
  assert.not.match(id('<b>@x</b>'), '<b>');
});

test('plain: terminal escapes and bidi overrides replaced, non-strings rendered', () => {
  assert.is(plain('a\u001b[31mred\u202e'), 'a\uFFFD[31mred\uFFFD');
  assert.is(plain(null), '');
  assert.is(plain(3), '3');
  assert.is(plain({ a: 1 }), '{"a":1}');
});

test('logLine: no line can start a workflow command, wherever the runner splits it', () => {
  const hostile = [
    '::stop-commands::pwned',
    'ok\r::error::forged',
    'ok\n  ::set-output name=outcome::pass',
    '\u00a0\u2003::warning::nbsp',
    '\u0085::notice::nel',
    '##[error]old style',
    '\ufeff::add-mask::x',
  ];
  for (const h of hostile) {
    const out = logLine(h);
    for (const line of out.split(/\r\n|\r|\n/)) {
      const trimmed = line.replace(/^[\s\u0085\u180e\ufeff]*/, '');
      assert.not.ok(trimmed.startsWith('::') || trimmed.startsWith('##['), JSON.stringify(line));
    }
  }
  assert.is(logLine('probe: fine :: here'), 'probe: fine :: here', 'a :: inside a line is harmless and kept');
  assert.not.match(logLine('a\rb'), '\r');
});

test.run();
