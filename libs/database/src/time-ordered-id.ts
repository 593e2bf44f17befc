import { v7 } from 'uuid';

/**
 * A new row's id: a UUIDv7, the time in milliseconds, then 73 random bits. Rows written one after another land
 * at the end of the index on their id, where random ids (v4) make every insert read and write a page somewhere
 * in an index that grows with history. The random bits are drawn afresh for each id (a sequence given as an
 * option is random too, not the library's counter within one millisecond), so one id says nothing of the next.
 */
export function timeOrderedId(): string {
  return v7({ msecs: Date.now() });
}
