/**
 * Group commit for a write that many requests make at once: calls that arrive while a batch is
 * being written wait and go together in the next one, one statement and one commit for all of
 * them. There is no timer: a lone call is written at once, and under load the batches grow by
 * themselves to what arrived during the previous write. Each caller gets its own result (or its
 * batch's error) only once its batch is committed, so acknowledging after `await` stays durable.
 */
export function coalesce<In, Out>(
  writeBatch: (items: In[]) => Promise<Out[]>,
  options: { maxBatch?: number; maxInFlight?: number } = {},
): (item: In) => Promise<Out> {
  const maxBatch = options.maxBatch ?? 200;
  // More than one batch in flight keeps a pool's connections busy while a commit waits on disk.
  const maxInFlight = options.maxInFlight ?? 2;
  let queue: { item: In; resolve: (out: Out) => void; reject: (err: unknown) => void }[] = [];
  let inFlight = 0;

  const pump = () => {
    while (inFlight < maxInFlight && queue.length > 0) {
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      inFlight++;
      writeBatch(batch.map((b) => b.item))
        .then(
          (outs) => {
            if (outs.length !== batch.length) {
              throw new Error(`batch of ${batch.length} answered ${outs.length} results`);
            }
            for (const [i, b] of batch.entries()) b.resolve(outs[i] as Out);
          },
          (err: unknown) => {
            for (const b of batch) b.reject(err);
          },
        )
        .catch((err: unknown) => {
          for (const b of batch) b.reject(err);
        })
        .finally(() => {
          inFlight--;
          pump();
        });
    }
  };

  return (item) =>
    new Promise<Out>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      pump();
    });
}
