# Homebrew formula for doppel, built from source with the Xcode toolchain,
# as Homebrew builds Swift command-line tools. Not tested on the development
# machine (no Mac there); the url and sha256 are filled in when a release is
# tagged:
#   brew install --build-from-source packaging/homebrew/doppel.rb
class Doppel < Formula
  desc "Contract mock server: serves a YAML contract or OpenAPI document, state and error paths included"
  homepage "https://github.com/doppel-mock/doppel"  # the public repository, once there is one
  url "https://github.com/doppel-mock/doppel/archive/refs/tags/v0.1.0.tar.gz"
  sha256 "0000000000000000000000000000000000000000000000000000000000000000"
  license "Apache-2.0"
  head "https://github.com/doppel-mock/doppel.git", branch: "main"

  depends_on xcode: ["16.3", :build]  # Swift 6.1
  depends_on macos: :sequoia           # macOS 15, as Package.swift declares

  def install
    system "swift", "build", "--disable-sandbox", "-c", "release", "--product", "doppel"
    bin.install ".build/release/doppel"
    generate_completions_from_executable(bin/"doppel", "--generate-completion-script")
  end

  test do
    assert_match version.to_s, shell_output("#{bin}/doppel --version")
    (testpath/"c.yaml").write "doppel: 1\nendpoints:\n  ok: { request: GET /ok, responses: [ { status: 200 } ] }\n"
    assert_match "c.yaml: ok", shell_output("#{bin}/doppel lint #{testpath}/c.yaml")
  end
end
