import { describe, expect, it } from 'vitest';
import { LineSplitter, parseWatchLine, WatchStreamError } from './watch-stream.ts';

const split = (chunks: (string | Buffer)[], max?: number) => {
  const s = new LineSplitter(max);
  const lines = chunks.flatMap((c) => s.push(Buffer.isBuffer(c) ? c : Buffer.from(c)).map(String));
  return { lines, rest: String(s.rest()) };
};

describe('LineSplitter', () => {
  it.each([
    ['one line in one chunk', ['a\n'], ['a'], ''],
    ['several lines in one chunk, the last unfinished', ['a\nb\nc'], ['a', 'b'], 'c'],
    ['a line across chunks', ['ab', 'cd', 'e\nf'], ['abcde'], 'f'],
    ['empty lines are lines', ['\n\n'], ['', ''], ''],
  ])('%s', (_name, chunks, lines, rest) => {
    expect(split(chunks)).toEqual({ lines, rest });
  });

  it('joins a character whose UTF-8 bytes arrive in two chunks', () => {
    const bytes = Buffer.from('{"n":"é"}\n');
    const cut = bytes.indexOf(0xc3) + 1;
    expect(split([bytes.subarray(0, cut), bytes.subarray(cut)]).lines).toEqual(['{"n":"é"}']);
  });

  it('takes a line of exactly the limit and refuses one byte more, before its end arrives', () => {
    expect(split(['abcd\n'], 4).lines).toEqual(['abcd']);
    expect(() => split(['abc', 'de'], 4)).toThrow(WatchStreamError);
    expect(() => split(['abcde\n'], 4)).toThrow(/longer than/);
  });
});

describe('parseWatchLine', () => {
  it('reads an event, skips a blank line', () => {
    expect(parseWatchLine('{"type":"ADDED","object":{"metadata":{"name":"a"}}}', 1)).toEqual({ type: 'ADDED', object: { metadata: { name: 'a' } } });
    expect(parseWatchLine('  ', 2)).toBeUndefined();
  });

  it.each([
    ['not JSON', '{"type":', /watch line 3 is not an event \(.*JSON.*\): \{"type":$/],
    ['no object', '{"type":"ADDED"}', /\(no type and object\)/],
    ['an array for an object', '{"type":"ADDED","object":[]}', /\(no type and object\)/],
    ['an unknown type', '{"type":"RENAMED","object":{}}', /\(unknown event type "RENAMED"\)/],
    ['a long line, cut in the message', `{"type":"${'x'.repeat(500)}`, /: \{"type":"x{111}…$/],
  ])('refuses %s, naming the line', (_name, line, message) => {
    expect(() => parseWatchLine(line, 3)).toThrow(message);
  });
});
