import { describe, expect, it } from 'vitest';
import { createSizedCache } from '../../src/lib/sized-cache.ts';
import { arrayLengths, jsonOf, withJsonField } from '../../src/lib/spliced-json.ts';

const entries = [{ term: 'workspace', translations: { de: 'Arbeitsbereich' } }, { term: 'ü "quoted"\n' }];
const text = JSON.stringify(entries);

describe('a body with a field spliced in as JSON text', () => {
  it('serialises exactly as the same body built from objects, the spliced field last', () => {
    const head = { version: 3, etag: '"v3"', changeNote: null, author: 'ada' };
    const body = withJsonField<Record<string, unknown>>(head, 'entries', { text, length: entries.length });
    expect(jsonOf(body)).toBe(JSON.stringify({ ...head, entries }));
    expect(jsonOf(withJsonField({}, 'entries', { text: '[]', length: 0 }))).toBe('{"entries":[]}');
  });

  it('reads as a real array to code that does not know about the splice', () => {
    const body = withJsonField<{ entries: unknown[] }>({ version: 1 }, 'entries', { text, length: 2 });
    expect(Object.keys(body)).toEqual(['version', 'entries']);
    expect(body.entries).toEqual(entries);
    expect(body.entries).toBe(body.entries); // parsed once
    expect({ ...body }).toEqual({ version: 1, entries });
    expect(JSON.stringify(body)).toBe(jsonOf(body));
  });

  it('counts the spliced array from what it was given, without parsing it', () => {
    // A length that differs from the text's shows that the count did not come from parsing the text.
    const body = withJsonField<Record<string, unknown>>({ tags: ['a', 'b', 'c'] }, 'entries', {
      text,
      length: 5000,
    });
    expect(arrayLengths(body)).toEqual([
      ['tags', 3],
      ['entries', 5000],
    ]);
  });

  it('leaves any other value to JSON.stringify', () => {
    for (const value of [{ a: [1, 2] }, [1, { b: 'c' }], 'text', 7, null]) {
      expect(jsonOf(value)).toBe(JSON.stringify(value));
    }
  });
});

describe('a cache bounded by the size of its values', () => {
  const cacheOf = (max: number) => createSizedCache<string>(max, (value) => value.length);

  it('drops the least recently used values to make room', () => {
    const cache = cacheOf(10);
    cache.set('a', 'aaaa');
    cache.set('b', 'bbbb');
    expect(cache.get('a')).toBe('aaaa'); // now b is the least recently used
    cache.set('c', 'cccc');
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBe('aaaa');
    expect(cache.get('c')).toBe('cccc');
  });

  it('replaces a key in place and keeps nothing bigger than itself', () => {
    const cache = cacheOf(10);
    cache.set('a', 'aaaaaaaa');
    cache.set('a', 'aa');
    cache.set('b', 'bbbbbbbb'); // fits only because the first value of a no longer counts
    expect(cache.get('a')).toBe('aa');
    cache.set('huge', 'h'.repeat(11));
    expect(cache.get('huge')).toBeUndefined();
    expect(cache.get('b')).toBe('bbbbbbbb');
    const none = cacheOf(0);
    none.set('a', 'a');
    expect(none.get('a')).toBeUndefined();
  });
});
