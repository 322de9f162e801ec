# batchscope on a CUDA image with PyTorch's LibTorch.
#   docker build -t batchscope .
#   docker run --gpus all -v "$PWD/runs:/opt/batchscope/runs" batchscope sweep configs/vgg16_jumps.yaml
# Runs are written under /opt/batchscope/runs and datasets read from /opt/batchscope/data (mount them:
# -v "$PWD/data:/opt/batchscope/data"); the image's configs are in /opt/batchscope/configs.

# The C++ libraries that PyTorch's image lacks: Debian packages unpacked, not installed, the same ones a
# host with only PyTorch gets from scripts/stage-deps.sh.
FROM debian:bookworm AS deps
COPY scripts/stage-deps.sh /usr/local/bin/stage-deps.sh
RUN bash /usr/local/bin/stage-deps.sh --into /deps

# PyTorch 2.7 or later: its LibTorch uses the C++11 ABI, as Debian's libraries do.
FROM pytorch/pytorch:2.7.1-cuda12.8-cudnn9-devel
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends g++ cmake make gnuplot-nox \
 && rm -rf /var/lib/apt/lists/*

COPY --from=deps /deps /opt/batchscope/deps
COPY . /usr/src/batchscope
# The installed program finds LibTorch and the staged libraries through its RUNPATH, with no LD_LIBRARY_PATH.
RUN bash /usr/src/batchscope/scripts/build-torch.sh --build-dir /tmp/batchscope-build \
      --deps /opt/batchscope/deps/usr --prefix /opt/batchscope --no-tests --remove-build
COPY configs /opt/batchscope/configs

WORKDIR /opt/batchscope
# On PATH, for the Slurm and Kubernetes jobs that batchscope submit writes (they run `batchscope sweep ...`).
ENV PATH=/opt/batchscope/bin:$PATH
ENTRYPOINT ["/opt/batchscope/bin/batchscope"]
CMD ["sweep", "configs/quick.yaml"]
