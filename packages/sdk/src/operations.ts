/**
 * The API operations this client calls, keyed by the operationId of the service's OpenAPI
 * document, with the client method that calls each. The methods take their paths from here, and
 * the service's test suite (test/api/contract-sync.test.ts) checks this table against the served
 * document: an operation added, renamed or moved there fails it until the client follows.
 */
export const OPERATIONS = {
  getLiveness: { method: 'GET', path: '/health', clientMethod: 'health' },
  getReadiness: { method: 'GET', path: '/ready', clientMethod: 'ready' },
  listProducts: { method: 'GET', path: '/api/partner/products', clientMethod: 'listProducts' },
  getProduct: { method: 'GET', path: '/api/partner/products/{slug}', clientMethod: 'getProduct' },
  getApyHistory: {
    method: 'GET',
    path: '/api/partner/products/{slug}/apy-history',
    clientMethod: 'getApyHistory',
  },
  getFeeStats: {
    method: 'GET',
    path: '/api/partner/products/{slug}/fee-stats',
    clientMethod: 'getFeeStats',
  },
  getYieldProjection: {
    method: 'GET',
    path: '/api/partner/products/{slug}/yield-calc',
    clientMethod: 'calculateYield',
  },
  getProductHealth: {
    method: 'GET',
    path: '/api/partner/products/{slug}/health',
    clientMethod: 'getProductHealth',
  },
  getPosition: {
    method: 'GET',
    path: '/api/partner/products/{slug}/position',
    clientMethod: 'getPosition',
  },
  postInboundEvent: {
    method: 'POST',
    path: '/api/partner/webhooks/inbound',
    clientMethod: 'sendInbound',
  },
} as const;

export type OperationId = keyof typeof OPERATIONS;

/** An operation's path with its `{name}` parameters filled in, each URL-encoded. */
export function operationPath(id: OperationId, params: Record<string, string> = {}): string {
  return OPERATIONS[id].path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new TypeError(`${id} needs ${name}`);
    return encodeURIComponent(value);
  });
}
