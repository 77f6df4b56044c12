import { render } from 'preact';
import { takeSecret } from './api.js';
import { App } from './app.jsx';

// The secret came in the address's fragment: keep it in this tab, out of the address bar and history.
takeSecret();

render(<App />, document.getElementById('app'));
