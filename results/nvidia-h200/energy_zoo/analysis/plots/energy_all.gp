set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'energy_all.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'Energy per sample of every group'
set ylabel 'energy per sample (J)'
set key below
set logscale x
set xrange [0.833333333333:1228.8]
set logscale y
set yrange [0.0527166090745:30.8582238095]
plot 'energy_all.dat' index 0 using 1:2 with linespoints lw 2 pt 7 ps 0.6 title 'resnet50 train fp32 · NVIDIA H200', \
     '' index 1 using 1:2 with linespoints lw 2 pt 7 ps 0.6 title 'vgg16 train fp32 · NVIDIA H200', \
     '' index 2 using 1:2 with linespoints lw 2 pt 7 ps 0.6 title 'lstm_lm train fp32 · NVIDIA H200', \
     '' index 3 using 1:2 with linespoints lw 2 pt 7 ps 0.6 title 'transformer train fp32 · NVIDIA H200', \
     '' index 4 using 1:2 with linespoints lw 2 pt 7 ps 0.6 title 'deepspeech2 train fp32 · NVIDIA H200'
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'energy_all.svg'
replot
unset output
