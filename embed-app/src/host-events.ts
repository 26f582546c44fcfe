/** Events and size updates to the host page, posted only to the configured host origin. */
import type { HostEventType } from './messages.ts';

export function hostChannel(hostOrigin: string | null) {
  const framed = window.parent !== window;
  const post = (message: object) => {
    if (framed && hostOrigin) window.parent.postMessage({ yieldEmbed: 1, ...message }, hostOrigin);
  };
  return {
    emit(type: HostEventType, data: Record<string, unknown> = {}) {
      post({ kind: 'event', type, data });
    },
    /** Tells the host the content height whenever it changes, so the iframe fits it. */
    watchSize(element: HTMLElement) {
      let last = 0;
      const send = () => {
        const height = Math.ceil(element.getBoundingClientRect().height);
        if (height !== last) {
          last = height;
          post({ kind: 'resize', height });
        }
      };
      new ResizeObserver(send).observe(element);
      send();
    },
  };
}

export type HostChannel = ReturnType<typeof hostChannel>;
