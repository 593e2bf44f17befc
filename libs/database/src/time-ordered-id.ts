import { randomBytes } from 'node:crypto';

import { v7 } from 'uuid';

/** Random bytes drawn 4 KiB at a time, as crypto.randomUUID draws them: a call into the generator costs about 2 µs. */
const POOL_BYTES = 4096;
const entropy = { pool: Buffer.alloc(0), offset: 0 };

/**
 * `size` random bytes (at most POOL_BYTES), each handed out once, for ids: a view into the shared pool, so not
 * for secrets (its `.buffer` reaches the neighbouring bytes). A refill replaces the pool rather than overwriting
 * it, so bytes handed out earlier never change under their holder.
 */
export function pooledRandomBytes(size: number): Buffer {
  if (size > POOL_BYTES) {
    throw new RangeError(`pooledRandomBytes hands out at most ${POOL_BYTES} bytes at a time, not ${size}`);
  }
  if (entropy.offset + size > entropy.pool.length) {
    entropy.pool = randomBytes(POOL_BYTES);
    entropy.offset = 0;
  }
  return entropy.pool.subarray(entropy.offset, (entropy.offset += size));
}

/**
 * A new row's id: a UUIDv7, the time in milliseconds, then 73 random bits. Rows written one after another land
 * at the end of the index on their id, where random ids (v4) make every insert read and write a page somewhere
 * in an index that grows with history. The random bits are drawn afresh for each id (a sequence given as an
 * option is random too, not the library's counter within one millisecond), so one id says nothing of the next;
 * they come from the shared pool, where the library would call the generator for each id.
 */
export function timeOrderedId(): string {
  return v7({ msecs: Date.now(), random: pooledRandomBytes(16) });
}
