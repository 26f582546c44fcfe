/**
 * The one confirmation view of the portal: what is about to happen, optional choices, a button
 * that does it (red when it cannot be undone) and a way back. Roll, revoke, remove, rotate and
 * disable all ask through it, so every "are you sure" reads and behaves the same.
 */
import { type Html, html } from './html.ts';

export function confirmView(o: {
  /** Where the form posts. */
  action: string;
  csrf: string;
  /** What happens, in a sentence or two. */
  question: Html;
  /** Choices (a fieldset of radios, a note), if any. */
  fields?: Html | undefined;
  button: string;
  /** Cannot be undone: a red button. */
  danger?: boolean | undefined;
  /** Where the way back goes. */
  cancel: string;
  /**
   * The way back's words ("Cancel" unless said): another, where the change itself is a
   * cancellation ("Keep invitation" beside "Cancel invitation"), so the two never read alike.
   */
  cancelLabel?: string | undefined;
}): Html {
  return html`<form method="post" action="${o.action}" class="panel confirm">
  <input type="hidden" name="_csrf" value="${o.csrf}">
  <div class="question">${o.question}</div>
  ${o.fields ?? ''}
  <div class="buttons"><button type="submit"${o.danger ? html` class="danger"` : ''}>${o.button}</button><a href="${o.cancel}">${o.cancelLabel ?? 'Cancel'}</a></div>
</form>`;
}
