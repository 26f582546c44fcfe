// Passkey ceremonies: the page's buttons ask the server for options, run the browser's WebAuthn
// through SimpleWebAuthn's bundle, and send the answer back. Delegated listeners, so pages swapped
// in by htmx need nothing re-bound.
(() => {
  const status = (text) => {
    const el = document.getElementById('passkey-status');
    if (el) el.textContent = text;
  };

  async function post(url, csrf, body) {
    const res = await fetch(url, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
      body: JSON.stringify(body ?? {}),
    });
    const json = await res.json().catch(() => ({}));
    if (!res.ok || json.success === false) {
      throw new Error(
        json.message || 'The portal did not accept this. Reload the page and try again.',
      );
    }
    return json;
  }

  // SimpleWebAuthn's WebAuthnError carries a code for what the browser reported; the codes are
  // stable, their messages are not (and speak to developers), so the page reads the code.
  const CODE_WORDS = {
    // The authenticator already holds one of this member's passkeys (excludeCredentials).
    ERROR_AUTHENTICATOR_PREVIOUSLY_REGISTERED:
      'This device already holds a passkey for your account, so it cannot add another; use another device or remove the old passkey first.',
  };

  const words = (err) =>
    (typeof err?.code === 'string' &&
      Object.hasOwn(CODE_WORDS, err.code) &&
      CODE_WORDS[err.code]) ||
    (err?.name === 'NotAllowedError'
      ? 'Cancelled, or no passkey was available. Try again, or use an email link.'
      : err?.message || 'Something went wrong. Try again.');

  document.addEventListener('click', async (event) => {
    const target = event.target instanceof Element ? event.target : null;
    if (!target) return;
    const { startRegistration, startAuthentication } = window.SimpleWebAuthnBrowser || {};

    const register = target.closest('[data-passkey-register]');
    if (register) {
      const box = document.getElementById('passkey-register');
      const name = document.getElementById('passkey-name');
      register.disabled = true;
      status('Follow your browser’s prompt…');
      try {
        const optionsJSON = await post(box.dataset.options, box.dataset.csrf);
        const response = await startRegistration({ optionsJSON });
        await post(box.dataset.verify, box.dataset.csrf, {
          response,
          name: name ? name.value : '',
        });
        window.location.assign(box.dataset.done);
      } catch (err) {
        status(words(err));
        register.disabled = false;
      }
      return;
    }

    const signIn = target.closest('[data-passkey-sign-in]');
    if (signIn) {
      const box = document.getElementById('passkey-sign-in');
      signIn.disabled = true;
      status('Follow your browser’s prompt…');
      try {
        const optionsJSON = await post(box.dataset.options, box.dataset.csrf);
        const response = await startAuthentication({ optionsJSON });
        // Where the server sends us next: the page that asked for this sign-in (a checked path
        // of the portal's, return-path.ts), else the keys page.
        const done = await post(box.dataset.verify, box.dataset.csrf, {
          response,
          return_to: box.dataset.return || undefined,
        });
        window.location.assign(done.redirect);
      } catch (err) {
        status(words(err));
        signIn.disabled = false;
      }
    }
  });
})();
