import { render } from 'preact';
import { App } from './app.jsx';

// The token came in the address (the server turned it into a cookie): take it out of the address bar and history.
if (new URLSearchParams(location.search).has('token')) history.replaceState(null, '', '/');

render(<App />, document.getElementById('app'));
