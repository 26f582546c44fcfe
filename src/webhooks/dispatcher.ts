/**
 * The webhook dispatcher (worker role): claims due deliveries from the queue, signs and sends each
 * with a bounded number in flight, and records the outcomes in batches. Several dispatchers (in one
 * or many processes) can share a database; the queue's claim protocol keeps them from sending the
 * same attempt twice (see src/db/webhook-delivery-queue.ts). An attempt counts when its request is
 * about to be written (the sender's `beforeBody` gate), so a worker killed while still connecting
 * has used no attempt.
 *
 * Schedule: attempt 1 at once, attempt 2 about 60 s after the first fails, attempt 3 about 10 min
 * after the second, each delay with ±10 % jitter so a receiver's outage does not come back as one
 * burst; then `failed`.
 */
import type { Queryable } from '../db/client.ts';
import {
  type AttemptOutcome,
  type ClaimedDelivery,
  createDeliveryQueue,
  MAX_ATTEMPTS,
} from '../db/webhook-delivery-queue.ts';
import type { Logger } from '../logger.ts';
import { deliveryAttempts, deliveryDuration } from '../telemetry/metrics.ts';
import { isRetryable } from '../worker/errors.ts';
import type { Job } from '../worker/runner.ts';
import type { SecretBox } from './secret-box.ts';
import type { Sender, SendResult } from './sender.ts';
import { type SigningSecret, signDelivery, signingSecret } from './signature.ts';

export interface DispatcherOptions {
  db: Queryable;
  logger: Logger;
  sender: Sender;
  secretBox: SecretBox;
  /** Delays before attempts 2 and 3. */
  retryDelaysMs?: readonly [number, number];
  /** ± fraction of each delay drawn at random. */
  jitter?: number;
  /**
   * How long a claimed attempt stays leased: longer than the send timeout, so a live worker always
   * records first; after it, a dead worker's attempt is taken over as the next one.
   */
  leaseMs?: number;
  /** Sends in flight at most. */
  concurrency?: number;
  /** How often an idle dispatcher looks for due deliveries. */
  pollMs?: number;
  /**
   * Sign with the Standard Webhooks scheme too (default). false: `X-Service-Signature` only, the
   * benchmark's baseline of what signing cost before.
   */
  standardSignatures?: boolean;
  /** The clock of `webhook-timestamp`, in milliseconds (tests). */
  now?: () => number;
  /** Called after each recorded outcome (tests and the benchmark observe deliveries with it). */
  onOutcome?: (delivery: ClaimedDelivery, result: SendResult) => void;
}

export const DEFAULT_RETRY_DELAYS_MS = [60_000, 600_000] as const;
export const DEFAULT_LEASE_MS = 30_000;

/** Delay before the attempt after `attempt`, with jitter. */
export function retryDelay(
  attempt: number,
  delays: readonly [number, number] = DEFAULT_RETRY_DELAYS_MS,
  jitter = 0.1,
  random: () => number = Math.random,
): number {
  const base = delays[Math.min(attempt, delays.length) - 1] ?? delays[delays.length - 1] ?? 0;
  return Math.round(base * (1 + jitter * (2 * random() - 1)));
}

const RECORD_BATCH = 200;
const RECORD_EVERY_MS = 10;

export function createDispatcher(options: DispatcherOptions) {
  const { db, logger, sender, secretBox } = options;
  const queue = createDeliveryQueue(db);
  const delays = options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
  const jitter = options.jitter ?? 0.1;
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const concurrency = options.concurrency ?? 128;
  const pollMs = options.pollMs ?? 50;

  const standard = options.standardSignatures ?? true;
  const now = options.now ?? Date.now;

  // Decrypted signing secrets by ciphertext (a rotation brings a new ciphertext; the previous one
  // stays cached while it still signs). Bounded: cleared when it grows past what any run needs.
  const secrets = new Map<string, SigningSecret>();
  const decrypt = (destinationId: string, ciphertext: string): SigningSecret => {
    let s = secrets.get(ciphertext);
    if (!s) {
      if (secrets.size >= 10_000) secrets.clear();
      s = signingSecret(secretBox.decrypt(ciphertext, `webhook_destination:${destinationId}`));
      secrets.set(ciphertext, s);
    }
    return s;
  };
  const sign = (d: ClaimedDelivery) => {
    const current = decrypt(d.destinationId, d.secretCiphertext);
    const valid: [SigningSecret, ...SigningSecret[]] =
      d.previousSecretCiphertext === null
        ? [current]
        : [current, decrypt(d.destinationId, d.previousSecretCiphertext)];
    const timestamp = Math.floor(now() / 1000);
    const signed = signDelivery(valid, d.eventId, timestamp, d.payload, standard);
    return {
      signature: signed.serviceSignature,
      eventId: d.eventId,
      ...(signed.webhookSignature === undefined
        ? {}
        : { webhookTimestamp: timestamp, webhookSignature: signed.webhookSignature }),
    };
  };

  let stopped = false;
  let inFlight = 0;
  const outcomes: Array<{
    delivery: ClaimedDelivery;
    outcome: AttemptOutcome;
    result: SendResult;
  }> = [];
  let wake: (() => void) | undefined;
  const nudge = () => {
    wake?.();
  };
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      }
      wake = done;
    });

  // Attempts are counted as sent in batches: every request whose connection opened since the last
  // statement waits for the next one (one statement in flight at a time), so a burst of sends
  // costs a few statements, not one each.
  const sending: Array<{ d: ClaimedDelivery; resolve: () => void; reject: (e: unknown) => void }> =
    [];
  let marking = false;
  const markSending = async () => {
    marking = true;
    while (sending.length > 0) {
      const batch = sending.splice(0, sending.length);
      try {
        const counted = await queue.markSent(
          batch.map(({ d }) => ({ id: d.id, attempt: d.attempt, claim: d.claim })),
        );
        for (const b of batch) {
          if (counted.has(b.d.id)) b.resolve();
          else b.reject(new Error('the lease ended before sending; another worker has it'));
        }
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
    }
    marking = false;
  };
  const countAsSent = (d: ClaimedDelivery) =>
    new Promise<void>((resolve, reject) => {
      sending.push({ d, resolve, reject });
      if (!marking) void markSending();
    });

  const outcomeOf = (d: ClaimedDelivery, r: SendResult): AttemptOutcome => ({
    id: d.id,
    attempt: d.attempt,
    claim: d.claim,
    ok: r.ok,
    statusCode: r.statusCode,
    bodyExcerpt: r.bodyExcerpt,
    error: r.error,
    retryInMs: r.ok || d.attempt >= MAX_ATTEMPTS ? 0 : retryDelay(d.attempt, delays, jitter),
    durationMs: r.durationMs,
  });

  const deliver = async (d: ClaimedDelivery) => {
    let result: SendResult;
    try {
      result = await sender.send({
        url: d.url,
        eventType: d.eventType,
        body: d.payload,
        sequence: d.productSeq,
        partnerSequence: d.partnerSeq,
        ...sign(d),
        beforeBody: () => countAsSent(d),
      });
    } catch (err) {
      // The sender never throws; a secret that does not decrypt does. Count it as a failure.
      result = {
        ok: false,
        statusCode: null,
        bodyExcerpt: null,
        error: err instanceof Error ? err.message : String(err),
        durationMs: 0,
      };
    }
    if (result.notSent) {
      // Nothing went out and nothing was counted: the lease runs out and the same attempt is
      // claimed again (or another worker already has it).
      logger.warn(
        { delivery: d.id, attempt: d.attempt, error: result.error },
        'webhook attempt not sent',
      );
      inFlight--;
      nudge();
      return;
    }
    deliveryAttempts.inc({
      destination: d.destinationId,
      outcome: result.ok ? 'delivered' : d.attempt >= MAX_ATTEMPTS ? 'failed' : 'retrying',
    });
    deliveryDuration.observe({ destination: d.destinationId }, result.durationMs / 1000);
    outcomes.push({ delivery: d, outcome: outcomeOf(d, result), result });
    inFlight--;
    nudge();
  };

  let lastFlush = 0;
  const flush = async () => {
    if (outcomes.length === 0) return;
    const batch = outcomes.splice(0, outcomes.length);
    lastFlush = Date.now();
    try {
      await queue.record(batch.map((b) => b.outcome));
    } catch (err) {
      // Not recorded: the leases run out and the next attempts go out then. Nothing is lost.
      logger.error({ err, count: batch.length }, 'webhook outcomes not recorded');
      return;
    }
    for (const b of batch) {
      if (!b.result.ok) {
        logger.warn(
          {
            delivery: b.delivery.id,
            event: b.delivery.eventId,
            attempt: b.delivery.attempt,
            status: b.result.statusCode,
            error: b.result.error,
          },
          b.delivery.attempt >= MAX_ATTEMPTS ? 'webhook delivery failed' : 'webhook attempt failed',
        );
      }
      options.onOutcome?.(b.delivery, b.result);
    }
  };

  let lastAbandonedSweep = 0;
  const loop = async () => {
    while (!stopped) {
      try {
        if (
          outcomes.length >= RECORD_BATCH ||
          (outcomes.length > 0 && Date.now() - lastFlush >= RECORD_EVERY_MS)
        ) {
          await flush();
        }
        if (Date.now() - lastAbandonedSweep > leaseMs / 2) {
          lastAbandonedSweep = Date.now();
          await queue.failAbandoned();
        }
        const room = concurrency - inFlight;
        let claimed: ClaimedDelivery[] = [];
        // Claim in chunks, not one by one, when at least half the room is free.
        if (room > 0 && (room >= concurrency / 2 || inFlight === 0)) {
          claimed = await queue.claim(room, leaseMs);
          for (const d of claimed) {
            inFlight++;
            void deliver(d);
          }
        }
        if (claimed.length === 0) {
          await sleep(inFlight > 0 || outcomes.length > 0 ? RECORD_EVERY_MS : pollMs);
        }
      } catch (err) {
        if (stopped) break;
        // A dropped database connection is retried after the pause: a warning, not an error.
        logger[isRetryable(err) ? 'warn' : 'error']({ err }, 'webhook dispatcher tick failed');
        await sleep(Math.max(pollMs, 1_000));
      }
    }
  };

  let running: Promise<void> | undefined;
  return {
    job(): Job {
      return {
        name: 'webhooks',
        start() {
          running ??= loop();
        },
        async stop() {
          stopped = true;
          nudge();
          await running;
          // Let the attempts in flight finish (the sender's own timeout bounds them) and record
          // them, so a clean stop leaves no lease to wait out.
          while (inFlight > 0) await sleep(RECORD_EVERY_MS);
          await flush();
        },
      };
    },
  };
}
