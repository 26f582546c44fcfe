// Partner portal: the little the browser must do. Copy buttons; passkey ceremonies (webauthn.js).
document.addEventListener('click', async (event) => {
  const button = event.target instanceof Element ? event.target.closest('[data-copy]') : null;
  if (!button) return;
  const source = document.getElementById(button.getAttribute('data-copy'));
  if (!source) return;
  try {
    await navigator.clipboard.writeText(source.textContent.trim());
    button.textContent = 'Copied';
  } catch {
    // Clipboard refused (insecure origin, permissions): select the text so Ctrl+C works.
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    button.textContent = 'Selected: press Ctrl+C';
  }
});

// htmx keeps no page snapshots (historyCacheSize 0, see layout.ts): remove any that an older page
// left in this tab, so nothing shown once (a new key, a signing secret) stays readable in storage.
// Sign-out loads the sign-in page whole, so this runs there too.
for (const storage of ['sessionStorage', 'localStorage']) {
  try {
    window[storage].removeItem('htmx-history-cache');
  } catch {
    // Storage disabled: nothing was kept either.
  }
}
