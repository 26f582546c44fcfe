/**
 * Saves an anvil node's chain to a file with `anvil_dumpState`, streamed. The answer is
 * `{"jsonrpc":"2.0","id":1,"result":"0x<hex of gzipped JSON>"}`: the hex is decoded and gunzipped
 * on its way to a temporary file beside the target, which is renamed over it once complete (a stop
 * cut short leaves the previous state, never half of one). Memory stays flat whatever the size of
 * the chain (200 days with every historical state: 530 MB of JSON). The file is what anvil's
 * `--load-state` reads.
 */
import { createWriteStream, renameSync, rmSync } from 'node:fs';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream } from 'node:stream/web';
import { createGunzip } from 'node:zlib';

export async function saveState(
  rpcUrl: string,
  file: string,
  options: { historicalStates: boolean; timeoutMs?: number },
): Promise<void> {
  const res = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'anvil_dumpState',
      params: [options.historicalStates],
    }),
    signal: AbortSignal.timeout(options.timeoutMs ?? 120_000),
  });
  if (!res.ok || !res.body) throw new Error(`anvil_dumpState answered HTTP ${res.status}`);
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    await pipeline(
      Readable.fromWeb(res.body as ReadableStream<Uint8Array>),
      hexOfResult(),
      createGunzip(),
      createWriteStream(tmp),
    );
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/** Passes on the bytes of the answer's `result` hex string; anything else is an error. */
function hexOfResult(): Transform {
  const MARK = '"result":"0x';
  let head = '';
  let inHex = false;
  let done = false;
  let odd = '';
  return new Transform({
    transform(chunk: Buffer, _encoding, callback: TransformCallback) {
      if (done) return callback();
      let text = chunk.toString('latin1');
      if (!inHex) {
        head += text;
        const at = head.indexOf(MARK);
        if (at < 0) {
          return head.length > 65_536
            ? callback(new Error(`anvil_dumpState: unexpected answer ${head.slice(0, 300)}`))
            : callback();
        }
        inHex = true;
        text = head.slice(at + MARK.length);
        head = '';
      }
      const end = text.indexOf('"');
      if (end >= 0) {
        text = text.slice(0, end);
        done = true;
      }
      text = odd + text;
      const even = text.length - (text.length % 2);
      odd = text.slice(even);
      callback(null, Buffer.from(text.slice(0, even), 'hex'));
    },
    flush(callback: TransformCallback) {
      if (done) return callback();
      callback(
        new Error(
          inHex
            ? 'anvil_dumpState: the answer was cut short'
            : `anvil_dumpState: ${head.slice(0, 300) || 'empty answer'}`,
        ),
      );
    },
  });
}
