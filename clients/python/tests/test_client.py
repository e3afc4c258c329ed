"""cordon_client against the real services.

Run by tests/integration/it_openapi.c, which starts the broker, proxy,
hatch and cordon serve on loopback and says where they are in the
environment: CORDON_BROKER, CORDON_SERVE, CORDON_ADMIN_KEY_FILE,
CORDON_LAUNCHER_KEY_FILE, CORDON_CALLBACK_KEY_FILE, CORDON_INPUTS (a
directory with repo/README.md in it), CORDON_CLIENT_DIR (this package's
directory).
"""

import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.environ.get("CORDON_CLIENT_DIR", os.path.dirname(os.path.dirname(__file__))))

import cordon_client as cc  # noqa: E402

ENV = os.environ


def manifest(name):
    return {
        "name": name,
        "command": ["/bin/true"],
        "env": {"LANG": "C.UTF-8"},
        "egress": [{"host": "api.test", "port": 9, "methods": ["GET"],
                    "paths": ["/ok/"], "reason": "the api",
                    "allow_cidrs": ["127.0.0.0/8"]}],
        "limits": {"wall_seconds": 60, "memory_mb": 512, "pids": 64,
                   "output_kb": 256},
        "return": {"protected": [".github/**"]},
    }


class Client(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.broker = cc.Broker(ENV["CORDON_BROKER"], cc.read_key(ENV["CORDON_ADMIN_KEY_FILE"]))
        cls.serve = cc.Serve(ENV["CORDON_SERVE"], cc.read_key(ENV["CORDON_LAUNCHER_KEY_FILE"]))
        cls.repo = os.path.join(ENV["CORDON_INPUTS"], "repo")
        cls.broker.put_manifest(manifest("py-job"))

    def test_manifest_put_and_get(self):
        m = manifest("py-other")
        first = self.broker.put_manifest(m)
        self.assertEqual(first["version"], 1)
        self.assertTrue(first["new_version"])
        m["egress"][0]["host"] = "other.test"
        second = self.broker.put_manifest(m)
        self.assertEqual(second["version"], 2)
        self.assertEqual(second["planes"], ["reachability"])
        got = self.broker.get_manifest("py-other", version=1)
        self.assertEqual(got["manifest"]["egress"][0]["host"], "api.test")
        with self.assertRaises(cc.Invalid) as e:
            self.broker.put_manifest({"name": "py-bad", "command": ["/bin/true"],
                                      "env": {"GITHUB_TOKEN": "x"}})
        self.assertEqual(e.exception.code, "invalid_manifest")
        self.assertTrue(any(p["field"] == "env.GITHUB_TOKEN" for p in e.exception.problems))
        with self.assertRaises(cc.NotFound) as e:
            self.broker.get_manifest("py-none")
        self.assertEqual(e.exception.code, "unknown_manifest")

    def test_run_wait_patch_report_output(self):
        job = self.serve.run("py-job", inputs=[(self.repo, "repo")],
                             command=["/bin/sh", "-c", "echo new > repo/NEW.md; echo said"])
        self.assertEqual(job["state"], "running")
        done = self.serve.wait(job["job"], timeout=60)
        self.assertEqual(done["result"]["stop_reason"], "exit")
        self.assertIn(b"+new", self.serve.patch(job["job"]))
        report = self.serve.report(job["job"])
        self.assertEqual(report["verdict"], done["result"]["verdict"])
        self.assertEqual(report["changes"], [{"path": "repo/NEW.md", "change": "added"}])
        out = self.serve.output(job["job"])
        self.assertEqual(out["trust"], "untrusted")
        self.assertEqual(out["stdout"]["text"], "said\n")
        self.assertEqual(list(self.serve.follow(job["job"])), [("stdout", "said\n")])

    def test_follow_while_it_runs(self):
        job = self.serve.run("py-job", inputs=[(self.repo, "repo")],
                             command=["/bin/sh", "-c", "echo early; sleep 60"])
        it = self.serve.follow(job["job"], wait=5)
        self.assertEqual(next(it), ("stdout", "early\n"))
        # Seen while it runs: the job only ends when stopped.
        self.assertEqual(self.serve.job(job["job"])["state"], "running")
        self.serve.stop(job["job"])
        rest = []
        try:
            while True:
                rest.append(next(it))
        except StopIteration as end:
            envelope = end.value
        self.assertEqual(rest, [])
        self.assertEqual(envelope["stdout"]["text"], "early\n")
        ids = [j["job"] for j in self.serve.iter_jobs(manifest="py-job", page=1)]
        self.assertIn(job["job"], ids)

    def test_typed_errors(self):
        with self.assertRaises(cc.JobNotStarted) as e:
            self.serve.run("py-no-such-manifest")
        self.assertEqual(e.exception.status, 502)
        self.assertIn("manifest", e.exception.message)
        with self.assertRaises(cc.NotFound) as e:
            self.serve.job("job_nope")
        self.assertEqual(e.exception.code, "unknown_job")
        with self.assertRaises(cc.Invalid) as e:
            self.serve.run("py-job", command=[1, 2])
        self.assertEqual(e.exception.code, "invalid_job")
        with self.assertRaises(cc.Unauthorized):
            cc.Serve(ENV["CORDON_SERVE"], "crk_" + "x" * 38).jobs()
        with self.assertRaises(cc.Forbidden):
            # The admin key is not serve's.
            cc.Broker(ENV["CORDON_BROKER"], cc.read_key(ENV["CORDON_LAUNCHER_KEY_FILE"])).audit()
        with self.assertRaises(cc.NoAnswer):
            cc.Serve("http://127.0.0.1:1", "k").jobs()

    def test_revoke_stops_a_running_job(self):
        job = self.serve.run("py-job", inputs=[(self.repo, "repo")],
                             command=["/bin/sh", "-c", "sleep 60"], idempotency_key="py-once")
        again = self.serve.run("py-job", inputs=[(self.repo, "repo")],
                               command=["/bin/sh", "-c", "sleep 60"], idempotency_key="py-once")
        self.assertEqual(again["job"], job["job"])
        with self.assertRaises(cc.Conflict) as e:
            self.serve.patch(job["job"])
        self.assertEqual(e.exception.code, "running")
        r = self.broker.revoke(job["job"], reason="py test")
        self.assertEqual(r["state"], "revoked")
        done = self.serve.wait(job["job"], timeout=30)
        self.assertEqual(done["result"]["stop_reason"], "revoked")
        self.assertEqual(self.broker.job(job["job"])["stop_reason"], "py test")

    def test_the_callback_is_verified(self):
        got = {}

        class Hook(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers["Content-Length"])
                got["body"] = self.rfile.read(n)
                got["sig"] = self.headers["X-Cordon-Signature"]
                self.send_response(204)
                self.end_headers()

            def log_message(self, *a):
                pass

        srv = http.server.HTTPServer(("127.0.0.1", 0), Hook)
        t = threading.Thread(target=srv.handle_request)
        t.start()
        url = f"http://127.0.0.1:{srv.server_address[1]}/done"
        job = self.serve.run("py-job", inputs=[(self.repo, "repo")],
                             command=["/bin/true"], callback=url)
        self.serve.wait(job["job"], timeout=60)
        t.join(30)
        srv.server_close()
        key = cc.read_key(ENV["CORDON_CALLBACK_KEY_FILE"])
        self.assertTrue(cc.verify_callback(got["body"], got["sig"], key))
        self.assertFalse(cc.verify_callback(got["body"] + b" ", got["sig"], key))
        self.assertEqual(json.loads(got["body"])["job"], job["job"])

    def test_pip_installs_it(self):
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run(
                [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                 "--target", d, ENV["CORDON_CLIENT_DIR"]],
                capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            r = subprocess.run(
                [sys.executable, "-c", "import cordon_client, sys; print(cordon_client.__file__)"],
                capture_output=True, text=True, cwd=d, env={"PYTHONPATH": d, "PATH": ENV.get("PATH", "")})
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(r.stdout.startswith(d), r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
