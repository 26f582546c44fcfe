/** Every message along an error's cause chain (viem wraps the provider's error in its own). */
export function errorMessages(err: unknown): string[] {
  const out: string[] = [];
  let e: unknown = err;
  for (let depth = 0; e && depth < 8; depth++) {
    if (typeof e !== 'object') break;
    const o = e as {
      message?: unknown;
      details?: unknown;
      shortMessage?: unknown;
      cause?: unknown;
    };
    for (const m of [o.message, o.details, o.shortMessage]) if (typeof m === 'string') out.push(m);
    e = o.cause;
  }
  return out;
}
