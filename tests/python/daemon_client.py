"""cuzk-daemon driven by a Python grpcio client, as Curio's Go client drives it.

The client is generated here, at run time, from the daemon's own proto/cuzk/v1/proving.proto by
grpcio-tools. The daemon binary is started as a child twice: on a TCP port (addressed as Curio
addresses a bare host:port, `dns:///127.0.0.1:PORT`) and on a Unix socket
(`unix:///.../cuzk.sock`). Requests carry exactly what Curio's lib/ffi/cuzk_funcs.go puts in
them: Winning PoSt (CRITICAL, request id `winpost-<miner>-<hex of randomness[:8]>`) and Window
PoSt per partition (HIGH, `wdpost-<miner>-<partition>-<randomness[:8] as Go's %d prints it>`),
bincode vanilla proofs, 32-byte randomness, the miner's actor id, abi.RegisteredPoStProof
numbers.

Checked here: COMPLETED with proof bytes of the right length and timings, the proofs written
out (the Rust driver, tests/daemon_python.rs, verifies them with filecoin-proofs), grpc-core's
own `:authority` on the Unix socket (the socket path, percent-encoded: no channel option),
AwaitProof's timeout, CancelProof, request_id idempotency and a FAILED request retried under
Curio's id proved anew, GetStatus and GetMetrics and the same text from the metrics endpoint
(`--metrics-listen`), bad requests refused with INVALID_ARGUMENT (or a FAILED result) naming
the field, and a bounded load: 8 clients on their own connections, random cancels and
timeouts, every request answered, completed equal to the daemon's proved count, its RSS back
near its start, no file descriptor left open.

Run through `cargo test --release --features daemon --test daemon_python` (it makes the
fixtures, runs this script with CUZK_PYTHON, verifies the proofs); by hand:
    python daemon_client.py --daemon BIN --proto-root proto --fixtures F.json --param-dir DIR --out DIR
"""

import argparse
import importlib
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request

import grpc

ARGS = None
pb = None  # cuzk.v1 messages
pb_grpc = None  # cuzk.v1 stubs
FIX = None  # the fixtures (see tests/daemon_python.rs)
MAX_MESSAGE = 256 << 20  # Curio's client: 256 MiB each way
OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE),
    ("grpc.max_receive_message_length", MAX_MESSAGE),
]


def generate_client(proto_root, out):
    """cuzk/v1/proving_pb2{,_grpc}.py from the daemon's .proto, imported."""
    from grpc_tools import protoc

    os.makedirs(out, exist_ok=True)
    rc = protoc.main(
        [
            "grpc_tools.protoc",
            "-I" + proto_root,
            "--python_out=" + out,
            "--grpc_python_out=" + out,
            os.path.join(proto_root, "cuzk", "v1", "proving.proto"),
        ]
    )
    if rc != 0:
        raise RuntimeError("grpc_tools.protoc failed on %s (exit %d)" % (proto_root, rc))
    sys.path.insert(0, out)
    global pb, pb_grpc
    pb = importlib.import_module("cuzk.v1.proving_pb2")
    pb_grpc = importlib.import_module("cuzk.v1.proving_pb2_grpc")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib_and_fds(pid):
    with open("/proc/%d/status" % pid) as f:
        rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
    return rss, len(os.listdir("/proc/%d/fd" % pid))


class Daemon:
    """A cuzk-daemon child: CPU, a 4 GiB budget, 2 synthesis threads, the test parameters."""

    def __init__(self, name, listen, target, metrics=None):
        self.name, self.target, self.metrics = name, target, metrics
        self.log_path = os.path.join(ARGS.out, "daemon-%s.log" % name)
        self.log = open(self.log_path, "wb")
        extra = ["--metrics-listen", metrics] if metrics else []
        self.proc = subprocess.Popen(
            [
                ARGS.daemon,
                "--listen", listen,
                "--gpus", "cpu",
                "--memory-budget", "4GiB",
                "--synthesis-threads", "2",
                "--param-dir", ARGS.param_dir,
                "--log-level", "info",
            ] + extra,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
        )
        self.channel = self.connect()
        self.stub = pb_grpc.ProvingEngineStub(self.channel)
        deadline = time.time() + 60
        while True:
            try:
                self.stub.GetStatus(pb.GetStatusRequest(), timeout=5)
                break
            except grpc.RpcError:
                if self.proc.poll() is not None or time.time() > deadline:
                    self.proc.kill()
                    self.proc.wait()
                    raise AssertionError("daemon %s did not answer:\n%s" % (name, self.log_text()))
                time.sleep(0.05)

    def connect(self, own_connection=False):
        """A channel to the daemon; `own_connection`: not shared with other channels. On the Unix
        socket grpc-core's own :authority (the socket path, percent-encoded) goes as it is."""
        options = list(OPTIONS)
        if own_connection:
            options.append(("grpc.use_local_subchannel_pool", 1))
        return grpc.insecure_channel(self.target, options=options)

    def log_text(self):
        self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def status(self):
        return self.stub.GetStatus(pb.GetStatusRequest(), timeout=10)

    def stop(self):
        """SIGTERM: the daemon drains and exits 0."""
        self.channel.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("daemon %s ignored SIGTERM:\n%s" % (self.name, self.log_text()))
        self.log.close()
        if code != 0:
            raise AssertionError("daemon %s exited %d:\n%s" % (self.name, code, self.log_text()))


DAEMONS = {}
PROOFS = {"winning": [], "window": [], "load": []}


def out_file(name, data):
    path = os.path.join(ARGS.out, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return name


def winning_request(request_id=None):
    w = FIX["winning"]
    randomness = bytes.fromhex(w["randomness"])
    return pb.SubmitProofRequest(
        request_id=request_id if request_id is not None
        else "winpost-%d-%s" % (FIX["miner"], randomness[:8].hex()),
        proof_kind=pb.WINNING_POST,
        sector_size=w["sector_size"],
        registered_proof=w["registered_proof"],
        priority=pb.CRITICAL,
        vanilla_proofs=[bytes.fromhex(v) for v in w["vanilla"]],
        miner_id=FIX["miner"],
        randomness=randomness,
    )


def window_request(partition):
    w = FIX["window"]
    randomness = bytes.fromhex(w["randomness"])
    go_bytes = "[" + " ".join(str(b) for b in randomness[:8]) + "]"  # Go's %d of a []byte
    return pb.SubmitProofRequest(
        request_id="wdpost-%d-%d-%s" % (FIX["miner"], partition, go_bytes),
        proof_kind=pb.WINDOW_POST_PARTITION,
        sector_size=w["sector_size"],
        registered_proof=w["registered_proof"],
        priority=pb.HIGH,
        vanilla_proofs=[bytes.fromhex(v) for v in w["partitions"][partition]],
        miner_id=FIX["miner"],
        randomness=randomness,
        partition_index=partition,
    )


def prove(stub, req):
    """Curio's Client.Prove: the Prove RPC, its result."""
    return stub.Prove(pb.ProveRequest(submit=req), timeout=600).result


R = None  # AwaitProofResponse, for its status names


class CurioShapes(unittest.TestCase):
    """Winning and Window PoSt as Curio sends them, over TCP and the Unix socket."""

    def check_completed(self, r, length):
        self.assertEqual(r.status, R.COMPLETED, r.error_message)
        self.assertEqual(len(r.proof), length)
        self.assertGreaterEqual(r.total_ms, r.gpu_compute_ms)
        self.assertGreaterEqual(r.total_ms, r.queue_wait_ms)
        self.assertTrue(r.job_id)

    def test_0_grpc_cores_own_authority_over_the_unix_socket(self):
        sock = DAEMONS["unix"].target[len("unix://"):]
        for target in ("unix://" + sock, "unix:" + sock):
            with self.subTest(target=target):
                ch = grpc.insecure_channel(target)  # no option: grpc-core's default authority
                try:
                    s = pb_grpc.ProvingEngineStub(ch).GetStatus(pb.GetStatusRequest(), timeout=10)
                finally:
                    ch.close()
                self.assertEqual(len(s.queues), 4, s)

    def test_1_winning_post_over_tcp(self):
        r = prove(DAEMONS["tcp"].stub, winning_request())
        self.check_completed(r, 192)
        PROOFS["winning"].append(out_file("winning-tcp.bin", r.proof))

    def test_2_winning_post_over_the_unix_socket(self):
        r = prove(DAEMONS["unix"].stub, winning_request())
        self.check_completed(r, 192)
        PROOFS["winning"].append(out_file("winning-unix.bin", r.proof))

    def test_3_window_post_partitions_over_the_unix_socket(self):
        parts = []
        for k in range(len(FIX["window"]["partitions"])):
            r = prove(DAEMONS["unix"].stub, window_request(k))
            self.check_completed(r, 192)
            parts.append(out_file("window-%d.bin" % k, r.proof))
        PROOFS["window"].append(parts)


class Control(unittest.TestCase):
    """Timeout, cancel, idempotency, status, metrics and bad requests, over TCP."""

    def test_await_timeout_then_the_proof(self):
        stub = DAEMONS["tcp"].stub
        job = stub.SubmitProof(winning_request("py-timeout"), timeout=60).job_id
        r = stub.AwaitProof(pb.AwaitProofRequest(job_id=job, timeout_ms=1), timeout=60)
        self.assertEqual(r.status, R.TIMEOUT, r)
        self.assertEqual(r.job_id, job)
        self.assertFalse(r.proof)
        r = stub.AwaitProof(pb.AwaitProofRequest(job_id=job, timeout_ms=0), timeout=600)
        self.assertEqual(r.status, R.COMPLETED, r.error_message)
        PROOFS["winning"].append(out_file("winning-after-timeout.bin", r.proof))

    def test_cancel_of_a_queued_job(self):
        stub = DAEMONS["tcp"].stub
        ahead = [stub.SubmitProof(winning_request("py-ahead-%d" % i), timeout=60).job_id for i in range(2)]
        job = stub.SubmitProof(winning_request("py-cancelled"), timeout=60).job_id
        c = stub.CancelProof(pb.CancelProofRequest(job_id=job), timeout=60)
        r = stub.AwaitProof(pb.AwaitProofRequest(job_id=job), timeout=600)
        self.assertEqual(r.status, R.CANCELLED, r)
        self.assertFalse(r.proof)
        self.assertTrue(c.was_running, "a live job: cancel says it was running or queued")
        # Cancelling again: over, nothing running.
        self.assertFalse(stub.CancelProof(pb.CancelProofRequest(job_id=job), timeout=60).was_running)
        for j in ahead:
            r = stub.AwaitProof(pb.AwaitProofRequest(job_id=j), timeout=600)
            self.assertEqual(r.status, R.COMPLETED, r.error_message)

    def test_request_id_is_idempotent(self):
        stub = DAEMONS["tcp"].stub
        before = DAEMONS["tcp"].status().total_proofs_completed
        req = winning_request("winpost-py-idem")
        first = stub.SubmitProof(req, timeout=60).job_id
        again = stub.SubmitProof(req, timeout=60).job_id
        self.assertEqual(first, again, "a repeated request_id while pending is the same job")
        r1 = prove(stub, req)
        r2 = prove(stub, req)
        self.assertEqual(r1.job_id, first)
        self.assertEqual(r2.job_id, first, "a repeated request_id when done is the same job")
        self.assertEqual(r1.status, R.COMPLETED, r1.error_message)
        self.assertEqual(r1.proof, r2.proof, "the same proof, not a second one")
        self.assertEqual(DAEMONS["tcp"].status().total_proofs_completed, before + 1)
        PROOFS["winning"].append(out_file("winning-idempotent.bin", r1.proof))

    def test_a_failed_request_retried_under_curios_id_is_proved_anew(self):
        stub = DAEMONS["tcp"].stub
        good = winning_request()  # Curio's id: winpost-<miner>-<hex of randomness[:8]>
        bad = pb.SubmitProofRequest()
        bad.CopyFrom(good)
        del bad.vanilla_proofs[:]
        bad.vanilla_proofs.extend([b"\x07" * 40])  # a vanilla proof read wrong
        failed = prove(stub, bad)
        self.assertEqual(failed.status, R.FAILED, failed)
        again = prove(stub, bad)
        self.assertEqual(again.status, R.FAILED, again)
        self.assertNotEqual(again.job_id, failed.job_id, "a FAILED job is proved anew, not returned")
        r = prove(stub, good)
        self.assertEqual(r.status, R.COMPLETED, r.error_message)
        self.assertNotEqual(r.job_id, again.job_id)
        PROOFS["winning"].append(out_file("winning-retried.bin", r.proof))

    def test_status_and_metrics_tell_the_truth(self):
        d = DAEMONS["tcp"]
        before = d.status().total_proofs_completed
        prove(d.stub, winning_request("py-status"))
        s = d.status()
        self.assertEqual(s.total_proofs_completed, before + 1)
        self.assertGreaterEqual(s.uptime_seconds, 0)
        self.assertEqual(len(s.gpus), 1, s)  # one CPU worker
        kinds = {q.proof_kind for q in s.queues}
        self.assertTrue(len(kinds) >= 4, s)
        self.assertEqual(sum(q.pending + q.in_progress for q in s.queues), 0, s)
        hot = [x.circuit_id for x in s.loaded_srs if x.tier == pb.SRSStatus.HOT]
        self.assertIn("winning-2k", hot, s)
        text = d.stub.GetMetrics(pb.GetMetricsRequest(), timeout=10).prometheus_text
        self.assertIn("# TYPE cuzk_proofs_total counter", text)
        m = re.search(r'^cuzk_proofs_total\{outcome="completed"\} (\d+)$', text, re.M)
        self.assertIsNotNone(m, text)
        self.assertEqual(int(m.group(1)), s.total_proofs_completed)
        self.assertRegex(text, r'(?m)^cuzk_queue_jobs\{kind="[^"]+",state="pending"\} 0$')
        # The metrics endpoint serves the same text to a scraper.
        with urllib.request.urlopen("http://%s/metrics" % d.metrics, timeout=10) as reply:
            self.assertEqual(reply.status, 200)
            self.assertEqual(reply.headers["Content-Type"], "text/plain; version=0.0.4; charset=utf-8")
            scraped = reply.read().decode()
        m = re.search(r'^cuzk_proofs_total\{outcome="completed"\} (\d+)$', scraped, re.M)
        self.assertIsNotNone(m, scraped)
        self.assertEqual(int(m.group(1)), s.total_proofs_completed)
        with self.assertRaises(urllib.error.HTTPError) as e:
            urllib.request.urlopen("http://%s/" % d.metrics, timeout=10)
        self.assertEqual(e.exception.code, 404)
        # Idle now: no job is the CPU backend's.
        self.assertEqual([g.current_job_id for g in s.gpus], [""], s)

    def test_bad_requests_name_the_field_and_the_daemon_keeps_serving(self):
        stub = DAEMONS["tcp"].stub
        good = winning_request("")

        def changed(**kw):
            req = pb.SubmitProofRequest()
            req.CopyFrom(good)
            for k, v in kw.items():
                if v is None:
                    req.ClearField(k)
                elif isinstance(v, list):
                    del getattr(req, k)[:]
                    getattr(req, k).extend(v)
                else:
                    setattr(req, k, v)
            return req

        snap = pb.SubmitProofRequest(
            proof_kind=pb.SNAP_DEALS_UPDATE,
            registered_proof=0,
            vanilla_proofs=[b"\x01"],
            comm_r_old=bytes(32),
            comm_r_new=bytes(40),  # a CID's bytes, not the raw commitment
            comm_d_new=bytes(32),
        )
        cases = [
            ("proof_kind", changed(proof_kind=99)),
            ("proof_kind", changed(proof_kind=None)),
            ("registered_proof", changed(registered_proof=999)),
            ("registered_proof", changed(registered_proof=10)),  # a Window proof for Winning
            ("sector_size", changed(sector_size=4096)),
            ("randomness", changed(randomness=None)),
            ("randomness", changed(randomness=bytes(31))),
            ("vanilla_proofs", changed(vanilla_proofs=[])),
            ("vanilla_proofs[1]", changed(vanilla_proofs=list(good.vanilla_proofs) + [b""])),
            ("comm_r_new", snap),
            ("vanilla_proof", pb.SubmitProofRequest(proof_kind=pb.POREP_SEAL_COMMIT, registered_proof=5)),
            ("vanilla_proof", pb.SubmitProofRequest(
                proof_kind=pb.POREP_SEAL_COMMIT, registered_proof=5, vanilla_proof=b"{not json")),
        ]
        for field, req in cases:
            with self.subTest(field=field):
                for call in (lambda: stub.SubmitProof(req, timeout=60),
                             lambda: stub.Prove(pb.ProveRequest(submit=req), timeout=60)):
                    with self.assertRaises(grpc.RpcError) as e:
                        call()
                    self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, e.exception.details())
                    self.assertTrue(e.exception.details().startswith(field + ":"), e.exception.details())
        with self.assertRaises(grpc.RpcError) as e:
            stub.Prove(pb.ProveRequest(), timeout=60)
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("submit", e.exception.details())
        for job_id, code in (("", grpc.StatusCode.INVALID_ARGUMENT), ("no-such-job", grpc.StatusCode.NOT_FOUND)):
            for call in (lambda: stub.AwaitProof(pb.AwaitProofRequest(job_id=job_id), timeout=60),
                         lambda: stub.CancelProof(pb.CancelProofRequest(job_id=job_id), timeout=60)):
                with self.assertRaises(grpc.RpcError) as e:
                    call()
                self.assertEqual(e.exception.code(), code)
                self.assertIn("job_id", e.exception.details())
        # An oversized message (over Curio's 256 MiB, sent by a client allowed to): refused
        # INVALID_ARGUMENT naming the request, on a channel of its own.
        big = grpc.insecure_channel(DAEMONS["tcp"].target,
                                    options=[("grpc.max_send_message_length", 300 << 20)])
        try:
            with self.assertRaises(grpc.RpcError) as e:
                pb_grpc.ProvingEngineStub(big).SubmitProof(
                    changed(vanilla_proofs=[bytes(257 << 20)]), timeout=120)
            self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, e.exception.details())
            self.assertTrue(e.exception.details().startswith("request:"), e.exception.details())
        finally:
            big.close()
        # A vanilla proof that does not decode: a FAILED result naming it.
        r = prove(stub, changed(vanilla_proofs=[b"\x07" * 40]))
        self.assertEqual(r.status, R.FAILED, r)
        self.assertIn("vanilla", r.error_message)
        # Still serving.
        r = prove(stub, winning_request("py-after-bad"))
        self.assertEqual(r.status, R.COMPLETED, r.error_message)
        PROOFS["winning"].append(out_file("winning-after-bad.bin", r.proof))


    def test_the_log_has_timestamps_and_job_ids(self):
        # (Runs after the others of this class: the idempotent request's job is in the log.)
        lines = DAEMONS["tcp"].log_text().splitlines()
        self.assertTrue(lines)
        stamped = re.compile(r"^\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ")
        for line in lines:
            self.assertRegex(line, stamped)
        job = next(l for l in lines if "request_id \"winpost-py-idem\"" in l)
        job_id = re.search(r"job (\S+): accepted", job).group(1)
        self.assertTrue(any(("job %s: proved" % job_id) in l for l in lines), lines[-5:])


class Load(unittest.TestCase):
    """8 clients x N Winning PoSt with random cancels and timeouts on their own connections."""

    def test_8_clients_with_random_cancels_and_timeouts_leave_no_leak(self):
        d = DAEMONS["unix"]
        prove(d.stub, winning_request("py-load-warm"))  # parameters loaded, pools warm
        time.sleep(0.3)
        rss0, fds0 = rss_kib_and_fds(d.proc.pid)
        done0 = d.status().total_proofs_completed
        seed = ARGS.seed if ARGS.seed is not None else random.randrange(1 << 32)
        print("load: seed %d (--seed to replay), %d per client" % (seed, ARGS.load), file=sys.stderr)
        answers, errors = [], []

        def client(c):
            rng = random.Random(seed * 8 + c)
            ch = d.connect(own_connection=True)
            stub = pb_grpc.ProvingEngineStub(ch)
            try:
                for i in range(ARGS.load):
                    req = winning_request("py-load-%d-%d" % (c, i))
                    what = rng.random()
                    if what < 0.4:  # Curio's way: Prove
                        answers.append(("prove", prove(stub, req)))
                        continue
                    job = stub.SubmitProof(req, timeout=60).job_id
                    if what < 0.6:  # cancel, at once or a little later (queued or running)
                        time.sleep(rng.choice([0, 0, rng.uniform(0, 0.2)]))
                        stub.CancelProof(pb.CancelProofRequest(job_id=job), timeout=60)
                    elif what < 0.8:  # a short timeout first
                        r = stub.AwaitProof(pb.AwaitProofRequest(job_id=job, timeout_ms=rng.randint(1, 50)), timeout=60)
                        if r.status not in (R.TIMEOUT, R.COMPLETED):
                            errors.append("short await: %s" % r)
                    answers.append(("await", stub.AwaitProof(pb.AwaitProofRequest(job_id=job), timeout=600)))
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append("client %d: %r" % (c, e))
            finally:
                ch.close()

        start = time.time()
        threads = [threading.Thread(target=client, args=(c,)) for c in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.time() - start
        self.assertEqual(errors, [])
        self.assertEqual(len(answers), 8 * ARGS.load, "every request answered")
        completed = [r for _, r in answers if r.status == R.COMPLETED]
        cancelled = [r for _, r in answers if r.status == R.CANCELLED]
        self.assertEqual(len(completed) + len(cancelled), len(answers),
                         [r for _, r in answers if r.status not in (R.COMPLETED, R.CANCELLED)][:3])
        self.assertTrue(all(len(r.proof) == 192 for r in completed))
        self.assertTrue(all(not r.proof and r.error_message for r in cancelled))
        self.assertTrue(all(how == "await" for how, r in answers if r.status == R.CANCELLED),
                        "only the cancelled jobs end cancelled")
        for i, r in enumerate(completed):
            PROOFS["load"].append(out_file("load/%03d.bin" % i, r.proof))
        # The connections closed, the daemon's descriptors and memory come back.
        deadline = time.time() + 10
        while True:
            rss1, fds1 = rss_kib_and_fds(d.proc.pid)
            if fds1 <= fds0 or time.time() > deadline:
                break
            time.sleep(0.1)
        s = d.status()
        print(
            "load: %d requests in %.1f s: %d completed, %d cancelled; RSS %d -> %d KiB; fds %d -> %d"
            % (len(answers), took, len(completed), len(cancelled), rss0, rss1, fds0, fds1),
            file=sys.stderr,
        )
        self.assertEqual(s.total_proofs_completed - done0, len(completed), "completed = proved")
        self.assertEqual(sum(q.pending + q.in_progress for q in s.queues), 0, s)
        self.assertLessEqual(fds1, fds0, "file descriptors left open")
        self.assertLessEqual(rss1, rss0 + rss0 // 2 + 64 * 1024, "RSS after the load (KiB)")


def main():
    global ARGS, FIX, R
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--daemon", required=True, help="the cuzk-daemon binary")
    p.add_argument("--proto-root", required=True, help="the directory holding cuzk/v1/proving.proto")
    p.add_argument("--fixtures", required=True, help="the fixture JSON tests/daemon_python.rs writes")
    p.add_argument("--param-dir", required=True, help="the parameter directory the daemon reads")
    p.add_argument("--out", required=True, help="where the proofs, logs and manifest.json go")
    p.add_argument("--load", type=int, default=25, help="Winning PoSt per client in the load test")
    p.add_argument("--seed", type=int, help="the load test's seed")
    ARGS = p.parse_args()
    os.makedirs(ARGS.out, exist_ok=True)
    with open(ARGS.fixtures) as f:
        FIX = json.load(f)
    generate_client(ARGS.proto_root, os.path.join(ARGS.out, "client"))
    R = pb.AwaitProofResponse
    port = free_port()
    sock = os.path.join(ARGS.out, "cuzk.sock")
    ok = False
    try:
        DAEMONS["tcp"] = Daemon("tcp", "127.0.0.1:%d" % port, "dns:///127.0.0.1:%d" % port,
                                metrics="127.0.0.1:%d" % free_port())
        DAEMONS["unix"] = Daemon("unix", "unix://" + sock, "unix://" + sock)
        suite = unittest.TestSuite()
        loader = unittest.defaultTestLoader
        for case in (CurioShapes, Control, Load):
            suite.addTests(loader.loadTestsFromTestCase(case))
        ok = unittest.TextTestRunner(verbosity=2, stream=sys.stderr).run(suite).wasSuccessful()
    finally:
        for d in DAEMONS.values():
            try:
                d.stop()
            except AssertionError as e:
                print(e, file=sys.stderr)
                ok = False
    if os.path.exists(sock):
        print("the Unix socket file was left behind: %s" % sock, file=sys.stderr)
        ok = False
    with open(os.path.join(ARGS.out, "manifest.json"), "w") as f:
        json.dump(PROOFS, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
