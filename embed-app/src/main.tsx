import { render } from 'preact';
import { App } from './App.tsx';
import { readConfig } from './config.ts';
import './styles.css';

const config = readConfig();
const root = document.documentElement;
if (config.accent) root.style.setProperty('--accent', config.accent);
const app = document.getElementById('app')!;
app.replaceChildren();
render(<App config={config} />, app);
