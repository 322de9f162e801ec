# batchscope on a CUDA image with PyTorch's LibTorch.
#   docker build -t batchscope .
#   docker run --gpus all -v "$PWD/runs:/opt/batchscope/runs" batchscope sweep configs/vgg16_jumps.yaml
FROM pytorch/pytorch:2.5.1-cuda12.4-cudnn9-devel

RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      g++ cmake make libyaml-cpp-dev libspdlog-dev libcxxopts-dev nlohmann-json3-dev libgtest-dev gnuplot-nox zlib1g-dev curl \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/batchscope
COPY . .
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBATCHSCOPE_BUILD_TESTS=OFF \
      -DCMAKE_PREFIX_PATH="$(python -c 'import torch; print(torch.utils.cmake_prefix_path)')" \
 && cmake --build build -j "$(nproc)" \
 && cmake --install build \
 && rm -rf build

ENTRYPOINT ["batchscope"]
CMD ["sweep", "configs/quick.yaml"]
