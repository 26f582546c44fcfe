/** This SDK's version, as in its package.json (a test keeps the two equal). */
export const SDK_VERSION = '0.1.0';

/**
 * The `User-Agent` the client sends, so that support can tell which SDK (and runtime) a partner
 * runs: `partner-yield-sdk/<version> node/<version>` (or the runtime fetch reports itself in a
 * browser, which keeps its own User-Agent).
 */
export function sdkUserAgent(): string {
  const g = globalThis as { process?: { versions?: Record<string, string | undefined> } };
  const versions = g.process?.versions;
  const runtime = versions?.bun
    ? `bun/${versions.bun}`
    : versions?.deno
      ? `deno/${versions.deno}`
      : versions?.node
        ? `node/${versions.node}`
        : undefined;
  return runtime
    ? `partner-yield-sdk/${SDK_VERSION} ${runtime}`
    : `partner-yield-sdk/${SDK_VERSION}`;
}
