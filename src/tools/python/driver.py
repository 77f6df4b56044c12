# The Python side of an interpreter session, run as `python3 -I -u -c <this file's text> CONFIG_JSON [UID:GID]`. It
# is read by the package (`python-process.ts`) and passed as `-c`, so nothing has to be reachable inside the sandbox.
# `-I` keeps the session directory (the working directory) and the user's site directory off `sys.path` while
# the driver imports its own modules: a `json.py` the user's code left there is not the driver's `json`.
#
# Protocol (see `python-process.ts`): requests arrive on fd 3 and replies leave on fd 4, each frame a 4-byte
# big-endian length and UTF-8 JSON. Both fds are moved to high, close-on-exec numbers at start, so user code
# printing, closing stdout or starting subprocesses cannot touch them. Everything the user code writes —
# Python's `print`, C-level writes, subprocesses, stderr — goes in order to fd 1, read by Node; a run ends
# by writing the request's random end marker to fd 1, so Node knows which output belongs to it. Python-level
# output beyond the request's byte cap is counted, not written, so endless printing costs the pipe nothing.
# A reply carries the request's nonce, taken out of the request before the user's code runs.
#
# The driver is started as the unprivileged user it runs as. Only where bubblewrap must run as root without a
# user namespace is it started as root with `UID:GID` as its last argument: it then switches before importing
# anything beyond `os` and `sys`, and ends at once if it cannot. Before any user code runs it sets its resource
# limits and arranges to die with its parent (PR_SET_PDEATHSIG, set after any switch of uid, which clears it;
# bubblewrap adds --die-with-parent).
import os, sys

if len(sys.argv) > 2:
    try:
        uid, gid = (int(part) for part in sys.argv[2].split(':'))
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    except (OSError, ValueError) as error:
        os.write(2, ('could not switch to uid %s: %s\n' % (sys.argv[2], error)).encode())
        os._exit(71)

# Only what every start needs is imported here: ast, traceback, linecache, warnings and ctypes load when used,
# which keeps a session's cold start short.
import codecs, fcntl, json, resource, signal, struct

CONFIG = json.loads(sys.argv[1])
REQ = fcntl.fcntl(3, fcntl.F_DUPFD_CLOEXEC, 200)
RES = fcntl.fcntl(4, fcntl.F_DUPFD_CLOEXEC, 200)
OUT = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 200)
os.close(3)
os.close(4)
os.closerange(5, 200)  # e.g. the pipe bubblewrap read its seccomp filter from
os.dup2(OUT, 2)
sys.argv = ['']


def own_user_namespace():
    """
    Without a sandbox: a user namespace of the driver's own, mapping its uid and gid to themselves, so that
    RLIMIT_NPROC counts this session's processes, not every process of the uid. Every capability the new
    namespace grants is dropped at once (bounding set, then effective, permitted and inheritable). Where user
    namespaces are not allowed nothing changes and the count stays shared. Returns whether it worked.
    """
    if not CONFIG.get('ownUserNamespace'):
        return False
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        uid, gid = os.getuid(), os.getgid()
        if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER
            return False
        for path, text in (('/proc/self/uid_map', '%d %d 1' % (uid, uid)), ('/proc/self/setgroups', 'deny'),
                           ('/proc/self/gid_map', '%d %d 1' % (gid, gid))):
            try:
                with open(path, 'w') as handle:
                    handle.write(text)
            except OSError:
                pass
        for capability in range(64):
            libc.prctl(24, capability, 0, 0, 0)  # PR_CAPBSET_DROP; past the last capability it just fails
        header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
        if libc.capset(header, (ctypes.c_uint32 * 6)()) != 0:
            os._exit(72)  # capabilities that could not be dropped: never run code with them
        return True
    except Exception:
        return False


def die_with_parent():
    if not CONFIG.get('parentPid'):
        return  # bubblewrap's --die-with-parent does it
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass
    if CONFIG.get('parentPid') and os.getppid() != CONFIG['parentPid']:
        os._exit(70)


def read_exact(n):
    chunks = []
    while n > 0:
        chunk = os.read(REQ, n)
        if not chunk:
            os._exit(0)
        chunks.append(chunk)
        n -= len(chunk)
    return b''.join(chunks)


def receive():
    (size,) = struct.unpack('>I', read_exact(4))
    return json.loads(read_exact(size).decode('utf-8'))


def send(message):
    data = json.dumps(message, ensure_ascii=False).encode('utf-8', 'replace')
    data = struct.pack('>I', len(data)) + data
    while data:
        data = data[os.write(RES, data):]


class Capture:
    """sys.stdout and sys.stderr during a run: writes to fd 1 up to a byte cap, then only counts."""

    encoding = 'utf-8'
    errors = 'replace'

    def __init__(self, cap):
        self.cap = cap
        self.written = 0
        self.dropped = 0
        self.encoder = codecs.getincrementalencoder('utf-8')('replace')
        self.is_closed = False

    def write(self, text):
        if self.is_closed:
            raise ValueError('I/O operation on closed file.')
        if not isinstance(text, str):
            raise TypeError('write() argument must be str, not ' + type(text).__name__)
        data = self.encoder.encode(text)
        room = self.cap - self.written
        if len(data) > room:
            self.dropped += len(data) - max(room, 0)
            data = data[:max(room, 0)]
        self.written += len(data)
        try:
            while data:
                data = data[os.write(1, data):]
        except OSError:
            pass
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        pass

    def isatty(self):
        return False

    def fileno(self):
        return 1

    def readable(self):
        return False

    def writable(self):
        return True

    def close(self):
        self.is_closed = True

    @property
    def closed(self):
        return self.is_closed


def user_frames(tb, filename):
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    return tb


def format_error(error, filename):
    import linecache, traceback
    for name, code in CELLS.items():
        linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    if isinstance(error, SyntaxError):
        return ''.join(traceback.format_exception_only(type(error), error))
    tb = user_frames(error.__traceback__, filename)
    return ''.join(traceback.format_exception(type(error), error, tb))


counter = [0]
CELLS = {}
QUIET = []


def cell_name(code):
    counter[0] += 1
    name = '<cell-%d>' % counter[0]
    CELLS[name] = code
    return name


def run_plain_interactive(code, namespace):
    """Runs a cell like IPython does: the value of a final expression is shown. Returns an error text or None."""
    import ast
    name = cell_name(code)
    try:
        tree = ast.parse(code, name)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, name, 'exec'), namespace)
        if last is not None:
            value = eval(compile(last, name, 'eval'), namespace)
            if value is not None:
                namespace['_'] = value
                print(repr(value))
    except BaseException as error:  # noqa: B036 - SystemExit and KeyboardInterrupt are the user's errors too
        text = format_error(error, name)
        sys.stdout.write(text)
        return text
    return None


def run_script(code, request):
    """Lagent's PythonInterpreter: fresh globals, then the answer from an expression or a variable."""
    name = cell_name(code)
    namespace = {'__name__': '__main__'}
    try:
        if request.get('answerFromStdout'):
            exec(compile(code, name, 'exec'), namespace)
            return None, None
        if request.get('answerSymbol'):
            exec(compile(code, name, 'exec'), namespace)
            return str(namespace[request['answerSymbol']]), None
        if request.get('answerExpr'):
            exec(compile(code, name, 'exec'), namespace)
            return str(eval(request['answerExpr'], namespace)), None
        lines = code.rstrip().split('\n')
        exec(compile('\n'.join(lines[:-1]), name, 'exec'), namespace)
        return str(eval(lines[-1], namespace)), None
    except BaseException as error:  # noqa: B036
        return None, format_error(error, name)


class Shell:
    """IPython's InteractiveShell when it can be imported (and is wanted), else the plain runner."""

    def __init__(self, want_ipython):
        self.ipython = None
        self.namespace = {'__name__': '__main__', '__builtins__': __builtins__}
        if want_ipython:
            try:
                from IPython.core.interactiveshell import InteractiveShell
                from traitlets.config import Config
                config = Config()
                config.HistoryManager.enabled = False
                config.HistoryManager.hist_file = ':memory:'
                shell = InteractiveShell.instance(config=config)
                for colors in ('NoColor', 'nocolor'):
                    try:
                        shell.colors = colors
                        break
                    except Exception:
                        pass
                try:
                    shell.InteractiveTB.set_mode('Plain')
                except Exception:
                    pass
                shell.displayhook.write_output_prompt = lambda: None
                self.ipython = shell
            except Exception:
                self.ipython = None

    def run(self, code):
        if self.ipython is None:
            return run_plain_interactive(code, self.namespace)
        result = self.ipython.run_cell(code, store_history=True)
        error = result.error_before_exec or result.error_in_exec
        if error is None:
            return None
        return '%s: %s' % (type(error).__name__, error)


def save_figures(directory, request):
    if 'matplotlib.pyplot' not in sys.modules:
        return []
    import matplotlib.pyplot as plt
    paths = []
    for number in plt.get_fignums():
        counter[0] += 1
        path = os.path.join(directory, 'figure-%d-%03d.png' % (request['id'], counter[0]))
        try:
            plt.figure(number).savefig(path)
            paths.append(path)
        except Exception as error:
            sys.stdout.write('could not save figure %d: %s\n' % (number, error))
    plt.close('all')
    return paths


def limit(kind, value):
    if value is None:
        return
    try:
        resource.setrlimit(kind, (value, value))
    except (ValueError, OSError):
        pass


def cpu_used():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def set_cpu_limit(seconds):
    if not seconds:
        return
    soft = int(-(-cpu_used() // 1)) + int(seconds)
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    if hard != resource.RLIM_INFINITY and soft > hard:
        soft = hard
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    except (ValueError, OSError):
        pass


def main():
    own_count = own_user_namespace()  # first: entering a user namespace clears the parent-death signal
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    work_dir = CONFIG['workDir']
    shell = Shell(CONFIG.get('ipython', True)) if CONFIG['mode'] == 'interactive' else None
    limit(resource.RLIMIT_CORE, 0)
    limit(resource.RLIMIT_AS, CONFIG.get('memoryBytes'))
    limit(resource.RLIMIT_FSIZE, CONFIG.get('fileSizeBytes'))
    limit(resource.RLIMIT_NPROC, CONFIG.get('sessionMaxProcesses') if own_count else CONFIG.get('maxProcesses'))
    # The driver's own imports are done: from here on the session directory comes first, as a notebook's does.
    sys.path.insert(0, '')
    send({'ready': True, 'ipython': bool(shell and shell.ipython), 'python': sys.version.split()[0]})
    while True:
        request = receive()
        nonce = request.pop('nonce', None)
        os.dup2(OUT, 1)
        os.dup2(OUT, 2)
        capture = Capture(request['maxBytes'])
        sys.stdout = sys.stderr = capture
        set_cpu_limit(request.get('cpuSeconds'))
        if request.get('figures') and not QUIET:
            import warnings  # matplotlib's "cannot show the figure" under Agg: figures come back as images
            warnings.filterwarnings('ignore', message='.*non-interactive.*')
            QUIET.append(True)
        value = error = None
        images = []
        try:
            if shell is not None:
                error = shell.run(request['code'])
            else:
                value, error = run_script(request['code'], request)
            if request.get('figures'):
                images = save_figures(work_dir, request)
        except BaseException as failure:  # noqa: B036 - a failure of the driver itself, reported as the run's
            error = '%s: %s' % (type(failure).__name__, failure)
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        os.dup2(OUT, 1)
        marker = request['marker'].encode('ascii')
        while marker:
            marker = marker[os.write(1, marker):]
        cap = request['maxBytes']  # the reply stays far below the frame size Node accepts
        value = value[:cap] if isinstance(value, str) else value
        error = error[:cap] if isinstance(error, str) else error
        send({'id': request['id'], 'nonce': nonce, 'value': value, 'error': error, 'images': images,
              'dropped': capture.dropped})


main()
