"""The peer of Benchmarks/grpc.sh: Python's grpcio serving contracts/tales.proto's
GetUsage with a fixed answer, on 127.0.0.1:PORT, stubs generated into WORK.

Usage: python3 Benchmarks/grpc-peer.py PORT WORK"""
import concurrent.futures
import pathlib
import subprocess
import sys

port, work = sys.argv[1], sys.argv[2]
root = pathlib.Path(__file__).resolve().parent.parent
subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{root / 'contracts'}", f"--python_out={work}",
                f"--grpc_python_out={work}", "tales.proto"], check=True)
sys.path.insert(0, work)
import grpc  # noqa: E402
import tales_pb2  # noqa: E402
import tales_pb2_grpc  # noqa: E402

ANSWER = tales_pb2.Usage(plan=tales_pb2.FREE, monthly_limit=5)
ANSWER.reset_date.FromJsonString("2026-12-01T00:00:00Z")


class Tales(tales_pb2_grpc.TalesServicer):
    def GetUsage(self, request, context):
        return ANSWER


server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=4))
tales_pb2_grpc.add_TalesServicer_to_server(Tales(), server)
server.add_insecure_port(f"127.0.0.1:{port}")
server.start()
server.wait_for_termination()
