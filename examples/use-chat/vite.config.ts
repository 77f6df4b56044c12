import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// `npx vite examples/use-chat` serves the page at http://localhost:5173; it talks to `lagent serve` at
// VITE_LAGENT_URL (default http://127.0.0.1:8090), or at the `?server=` of the page's address.
export default defineConfig({ root: import.meta.dirname, plugins: [react()] });
