/** Entry of host.js: the helper as the global `YieldEmbed` for a plain `<script>` tag. */
import { mount } from './host.ts';

(window as unknown as { YieldEmbed: { mount: typeof mount } }).YieldEmbed = { mount };
