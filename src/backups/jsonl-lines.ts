import { createReadStream } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';

/**
 * The lines of a JSON Lines file, read in chunks so a table file is never held in memory whole.
 * A line longer than `maxLineBytes` throws instead of growing the buffer without bound.
 */
export async function* jsonlLines(file: string, maxLineBytes: number): AsyncGenerator<string> {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  for await (const chunk of createReadStream(file, { highWaterMark: 256 * 1024 })) {
    pending += decoder.write(chunk as Buffer);
    let start = 0;
    let newline = pending.indexOf('\n', start);
    while (newline !== -1) {
      const line = pending.slice(start, newline);
      if (line.length > 0) yield line;
      start = newline + 1;
      newline = pending.indexOf('\n', start);
    }
    pending = pending.slice(start);
    if (pending.length > maxLineBytes) throw new Error(`a line is longer than ${maxLineBytes} bytes`);
  }
  pending += decoder.end();
  if (pending.length > 0) yield pending;
}
