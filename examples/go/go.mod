module cuzk

go 1.19
