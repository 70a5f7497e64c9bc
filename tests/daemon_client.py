#!/usr/bin/env python3
"""A grpcio client of cuzk-daemon, its stubs generated from proto/cuzk/v1/proving.proto by
grpcio-tools, sending what Curio sends. Run by tests/daemon.rs (python_grpcio_client_...):

    daemon_client.py ADDRESS REQUEST.json

REQUEST.json holds a Winning PoSt's miner, randomness and vanilla proofs (hex). Prints
`proof <hex>` for the Rust test to verify with filecoin-proofs; exits non-zero on any
unexpected answer."""

import base64
import json
import os
import sys
import tempfile

from grpc_tools import protoc
import grpc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def stubs():
    out = tempfile.mkdtemp(prefix="cuzk-py-")
    include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    rc = protoc.main(["protoc", f"-I{ROOT}/proto", f"-I{include}", f"--python_out={out}",
                      f"--grpc_python_out={out}", "cuzk/v1/proving.proto"])
    assert rc == 0, "grpcio-tools could not compile the .proto"
    sys.path.insert(0, out)
    from cuzk.v1 import proving_pb2, proving_pb2_grpc
    return proving_pb2, proving_pb2_grpc


def main():
    address, request = sys.argv[1], json.load(open(sys.argv[2]))
    pb, rpc = stubs()
    opts = [("grpc.max_send_message_length", 256 << 20), ("grpc.max_receive_message_length", 256 << 20)]
    target = address if address.startswith("unix:") else address.removeprefix("http://")
    client = rpc.ProvingEngineStub(grpc.insecure_channel(target, options=opts))
    randomness = bytes.fromhex(request["randomness"])
    winning = pb.SubmitProofRequest(
        request_id="winpost-%d-%s" % (request["miner"], randomness[:8].hex()),
        proof_kind=pb.WINNING_POST, sector_size=2048, registered_proof=0, priority=pb.CRITICAL,
        vanilla_proofs=[bytes.fromhex(v) for v in request["vanilla"]],
        miner_id=request["miner"], randomness=randomness)
    result = client.Prove(pb.ProveRequest(submit=winning)).result
    assert result.status == pb.AwaitProofResponse.COMPLETED, result
    assert len(result.proof) == 192, len(result.proof)

    # Curio's backpressure: pending + in_progress summed over the queues.
    status = client.GetStatus(pb.GetStatusRequest())
    assert sum(q.pending + q.in_progress for q in status.queues) == 0, status
    assert status.total_proofs_completed >= 1, status

    # Bad requests in Curio's shapes: InvalidArgument naming the field.
    c1_wrapper = json.dumps({"SectorNum": 7, "Phase1Out": base64.b64encode(b"{}").decode(),
                             "SectorSize": 2048}).encode()
    bad = [
        ("randomness", pb.SubmitProofRequest(proof_kind=pb.WINNING_POST, registered_proof=0,
                                             vanilla_proofs=[b"x"], randomness=b"short")),
        ("SectorNum", pb.SubmitProofRequest(proof_kind=pb.POREP_SEAL_COMMIT, registered_proof=8,
                                            sector_size=34359738368, sector_number=8,
                                            vanilla_proof=c1_wrapper)),
        ("comm_d_new", pb.SubmitProofRequest(proof_kind=pb.SNAP_DEALS_UPDATE, registered_proof=3,
                                             vanilla_proofs=[b"x"], comm_r_old=bytes(32),
                                             comm_r_new=bytes(32), comm_d_new=bytes(40))),
    ]
    for field, req in bad:
        try:
            client.SubmitProof(req)
            raise AssertionError(f"{field}: accepted")
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, (field, e)
            assert field in e.details(), (field, e.details())

    metrics = client.GetMetrics(pb.GetMetricsRequest()).prometheus_text
    assert "cuzk_proofs_total" in metrics, metrics
    print("proof", result.proof.hex())


if __name__ == "__main__":
    main()
