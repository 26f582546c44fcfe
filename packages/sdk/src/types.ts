/**
 * Named types of the API's resources, read out of the generated OpenAPI types (never written by
 * hand), so a change of the service's document changes them at the next `npm run generate`.
 */
import type { components, paths } from './generated/openapi.ts';

type Json<R> = R extends { content: { 'application/json': infer B } } ? B : never;
type GetOk<P extends keyof paths> = paths[P] extends { get: { responses: { 200: infer R } } }
  ? Json<R>
  : never;
/** The `data` of a `GET` path's 200 answer. */
export type Data<P extends keyof paths> = GetOk<P> extends { data: infer D } ? D : never;
/** The query parameters of a `GET` path. */
export type Query<P extends keyof paths> = paths[P] extends {
  get: { parameters: { query?: infer Q } };
}
  ? NonNullable<Q>
  : never;

export type Product = Data<'/api/partner/products/{slug}'>;
export type LatestMetrics = NonNullable<Product['latest_metrics']>;
export type ProductStatus = Product['status'];
export type ApyHistoryRow = Data<'/api/partner/products/{slug}/apy-history'>[number];
export type FeeStatsRow = Data<'/api/partner/products/{slug}/fee-stats'>[number];
export type YieldProjection = Data<'/api/partner/products/{slug}/yield-calc'>;
export type ProductHealth = Data<'/api/partner/products/{slug}/health'>;
export type Position = Data<'/api/partner/products/{slug}/position'>;
export type EventsPage = Data<'/api/partner/events'>;
export type FeedEvent = EventsPage['events'][number];
export type EventsQuery = Query<'/api/partner/events'>;
export type Liveness = Data<'/health'>;
export type Readiness = Data<'/ready'>;

type ApyDays = NonNullable<Query<'/api/partner/products/{slug}/apy-history'>['days']>;
/** `days` as the document types it: the integers 7, 30 or 180. */
export type ApyHistoryQuery = { days?: ApyDays };
export type FeeStatsQuery = Query<'/api/partner/products/{slug}/fee-stats'>;
export type YieldCalcQuery = Query<'/api/partner/products/{slug}/yield-calc'>;

/** Every error code of the service's catalogue. */
export type ApiErrorCode = components['schemas']['Error']['code'];

type InboundPost = paths['/api/partner/webhooks/inbound']['post'];
export type InboundAck = Json<InboundPost['responses'][200]>;
export type InboundEventType = InboundPost['parameters']['header']['X-Service-Event'];
